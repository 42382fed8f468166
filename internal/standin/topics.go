package standin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicsTimeout bounds one CreateTopics request.
const topicsTimeout = 10 * time.Second

// CreateTopics creates topics on the Kafka cluster that cl (a *kgo.Client) reaches, each with
// partitions(topic) partitions and replication factor 1, in one CreateTopics request; a topic
// that exists is left as it is, and an empty or repeated name is skipped. It is the one place
// the local Kafka's topics are made: klt's local runs and esmtest's clusters alike.
func CreateTopics(ctx context.Context, cl kmsg.Requestor, partitions func(topic string) int32, topics ...string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(topicsTimeout.Milliseconds())
	seen := map[string]bool{}
	for _, t := range topics {
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t, partitions(t), 1
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, topicsTimeout+5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("creating the topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// Partitions returns a partitions function of CreateTopics that gives every topic n.
func Partitions(n int32) func(string) int32 { return func(string) int32 { return n } }
