package esm

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaKickedMemberJoinsAgain: a member the coordinator no longer knows (its session timed
// out under load, the coordinator moved) loses its partitions and joins again, as a consumer
// does; the mapping goes on. Before, kgo's "unable to join group session" stopped Run.
func TestKafkaKickedMemberJoinsAgain(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "kicked", 1)
	fn := newKafkaFunction(t, nil)
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchingWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	runKafka(t, m)
	f.produceN(0, 1)
	kafkaWaitFor(t, 30*time.Second, "the first record committed", func() bool { return f.committed("g", 1)[0] == 1 })
	kick := f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: "g", TopLevel: true, Err: kerr.UnknownMemberID})
	kafkaWaitFor(t, 30*time.Second, "the member kicked", func() bool { return kick.Hits() > 0 })
	f.produceN(0, 1)
	kafkaWaitFor(t, 30*time.Second, "the second record committed", func() bool { return f.committed("g", 1)[0] == 2 })
	if err := m.runErr(); err != nil {
		t.Fatalf("Run stopped: %v", err)
	}
}

// TestKafkaCommitRetriesRetriableErrors: a commit the broker answers with a retriable error for
// one of its partitions (the coordinator loading) is tried again. kgo retries such a commit
// itself only when the whole request fails; before, one partition's answer stopped Run.
func TestKafkaCommitRetriesRetriableErrors(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "commit-retry", 2)
	f.produceN(0, 1)
	f.produceN(1, 1)
	f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "g", Partitions: []int32{1}, Err: kerr.CoordinatorLoadInProgress})
	fn := newKafkaFunction(t, nil)
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchingWindow(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	runKafka(t, m)
	kafkaWaitFor(t, 30*time.Second, "both records committed", func() bool {
		c := f.committed("g", 2)
		return c[0] == 1 && c[1] == 1 || m.runErr() != nil
	})
	if err := m.runErr(); err != nil {
		t.Fatalf("Run stopped: %v", err)
	}
}
