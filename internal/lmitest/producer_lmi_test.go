package lmitest_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/kfaketest"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/producer"
)

// A consume-transform-produce function (producer.ProduceOnce, two outputs per input, to the
// input's partition of another topic, on kfake, with its keys on dynalite) whose batches are
// each delivered twice at once, 8 invocations in flight in one process sharing one Kafka
// client: every output is in the topic once, in input order per partition and per key.
func TestLMIProduceOnce(t *testing.T) {
	const partitions, records, batchSize = 4, 32, 8
	t.Run(fmt.Sprintf("partitions=%d_records=%d_outputs=%d_batch=%d_each_batch_twice_at_once_concurrency=%d",
		partitions, partitions*records, 2*partitions*records, batchSize, 2*partitions), func(t *testing.T) {
		produceOnce(t, partitions, records, batchSize)
	})
}

func produceOnce(t *testing.T, partitions, records, batchSize int) {
	db := standintest.StartDynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, db.Client(), dynamodb.TableInput("lmi-produce")); err != nil {
		t.Fatal(err)
	}
	store, err := dynamodb.NewStore(db.Client(), "lmi-produce")
	if err != nil {
		t.Fatal(err)
	}
	c := kfaketest.Cluster(t, "out", int32(partitions))
	cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext(),
		producer.WithClientOptions(kgo.RecordPartitioner(kgo.ManualPartitioner())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	var logs lmitest.Output
	logger := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	process := func(ctx context.Context, r *kafkaevent.Record) error {
		outs := make([]*kgo.Record, 2)
		for i := range outs {
			outs[i] = &kgo.Record{Topic: "out", Partition: r.Partition, Key: r.Key, Value: fmt.Appendf(nil, "%d/%d/%d", r.Partition, r.Offset, i)}
		}
		if err := producer.ProduceOnce(ctx, cl, store, r, outs); err != nil {
			return err
		}
		lc, _ := lambdacontext.FromContext(ctx)
		logger.InfoContext(ctx, "produced", "ctx_request", lc.AwsRequestID)
		return nil
	}
	meet := &meeting{t: t}
	h := lambdalog.WrapHandler(batch.KafkaHandler(process, batch.WithLogger(logger), batch.WithHooks(meet)))
	mapping := &kafkaMapping{partitions: partitions, records: records, batchSize: batchSize, dup: 2,
		key:   func(p, off int) string { return fmt.Sprintf("p%d-k%d", p, off%3) },
		value: func(p, off int) string { return "v" }}
	st := mapping.run(t, h, meet)
	t.Logf("%d invocations in %d rounds, up to %d at once", st.invocations, st.rounds, 2*partitions)
	checkOutputs(t, c.ListenAddrs(), cl, partitions, records)
	checkLogLines(t, &logs, st.invocations)
}

// checkOutputs reads topic "out" back: output i of input p/off is there once, and each
// partition's (and key's) outputs are in input order.
func checkOutputs(t *testing.T, addrs []string, cl *kgo.Client, partitions, records int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A last record per partition: its offset is how many records the partition holds before it.
	ends := map[int32]int64{}
	for p := range partitions {
		r := &kgo.Record{Topic: "out", Partition: int32(p), Value: []byte("end")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		ends[int32(p)] = r.Offset
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]int{}
	last := make([][2]int64, partitions) // per partition: the last input offset and output index read
	for i := range last {
		last[i] = [2]int64{-1, 1}
	}
	done := 0
	for done < partitions {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading the outputs back: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "end" {
				done++
				return
			}
			got[string(r.Value)]++
			var p, off, i int64
			if _, err := fmt.Sscanf(string(r.Value), "%d/%d/%d", &p, &off, &i); err != nil || p != int64(r.Partition) {
				t.Errorf("output %q in partition %d", r.Value, r.Partition)
				return
			}
			if prev := last[p]; off < prev[0] || (off == prev[0] && i <= prev[1]) {
				t.Errorf("partition %d: output %q after %d/%d", p, r.Value, prev[0], prev[1])
			}
			last[p] = [2]int64{off, i}
		})
	}
	lost, twice := 0, 0
	for p := range partitions {
		for off := range records {
			for i := range 2 {
				switch n := got[fmt.Sprintf("%d/%d/%d", p, off, i)]; {
				case n == 0:
					lost++
				case n > 1:
					twice++
				}
			}
		}
	}
	total := int64(0)
	for _, n := range ends {
		total += n
	}
	t.Logf("topic out: %d records for %d outputs, %d lost, %d twice", total, 2*partitions*records, lost, twice)
	if lost > 0 || twice > 0 || total != int64(2*partitions*records) {
		t.Errorf("%d outputs lost, %d produced twice, %d records in the topic; want 0, 0, %d", lost, twice, total, 2*partitions*records)
	}
}
