package standin

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CreateTopics makes each topic once with its partitions, skips empty and repeated names, and
// leaves a topic that exists as it is.
func TestCreateTopics(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "old"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	parts := map[string]int32{"a": 3, "b": 1, "old": 5}
	if err := CreateTopics(ctx, cl, func(t string) int32 { return parts[t] }, "a", "", "b", "a", "old"); err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]int{"a": 3, "b": 1, "old": 2} {
		if got := len(c.PartitionInfos(topic)); got != want {
			t.Errorf("%s: %d partitions, want %d", topic, got, want)
		}
	}
	if err := CreateTopics(ctx, cl, Partitions(1)); err != nil {
		t.Errorf("no topics: %v", err)
	}
}
