package producer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/producer"
)

// javaPartitions is where the Java client puts a keyed record: Utils.toPositive(
// Utils.murmur2(key)) % numPartitions (BuiltInPartitioner.partitionForKey, Kafka 3.3+; the
// DefaultPartitioner before it). The table was computed outside this package, by a
// transcription of Utils.murmur2 (seed 0x9747b28c, m 0x5bd1e995, r 24, 32-bit arithmetic)
// that reproduces Kafka's UtilsTest.testMurmur2 vectors ("21" -973932308, "foobar"
// -790332482, "abc" 479470107, "a-little-bit-long-string" -985981536,
// "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8" -58897971); toPositive is n & 0x7fffffff.
var javaPartitions = []struct {
	key    []byte
	murmur int32 // Utils.murmur2(key), as Java's int
	// partition for 1, 3, 6, 7, 12 and 50 partitions
	want [6]int32
}{
	{[]byte{}, 275646681, [6]int32{0, 0, 3, 2, 9, 31}}, // empty, not null: hashed
	{[]byte("a"), -1563381124, [6]int32{0, 1, 4, 5, 4, 24}},
	{[]byte("21"), -973932308, [6]int32{0, 0, 0, 3, 0, 40}},
	{[]byte("abc"), 479470107, [6]int32{0, 0, 3, 4, 3, 7}},
	{[]byte("foobar"), -790332482, [6]int32{0, 0, 0, 0, 6, 16}},
	{[]byte("order-1"), 1221710326, [6]int32{0, 1, 4, 4, 10, 26}},
	{[]byte("order-2"), -1055499005, [6]int32{0, 0, 3, 1, 3, 43}},
	{[]byte("customer-42"), -542987495, [6]int32{0, 0, 3, 1, 9, 3}},
	{[]byte("ключ"), 2122343024, [6]int32{0, 2, 2, 4, 8, 24}},
	{[]byte{0}, 375494588, [6]int32{0, 2, 2, 0, 8, 38}},
	{[]byte{0xff, 0xfe, 0xfd, 0xfc, 0xfb}, 524068735, [6]int32{0, 1, 1, 1, 7, 35}},
	{[]byte("a-little-bit-long-string"), -985981536, [6]int32{0, 2, 2, 1, 8, 12}},
	{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971, [6]int32{0, 2, 5, 3, 5, 27}},
}

var partitionCounts = [6]int32{1, 3, 6, 7, 12, 50}

func TestKeysLandWhereJavaPutsThem(t *testing.T) {
	opts := []kfake.Opt{kfake.NumBrokers(3)}
	for _, n := range partitionCounts {
		opts = append(opts, kfake.SeedTopics(n, fmt.Sprintf("p%d", n)))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var recs []*kgo.Record
	for _, row := range javaPartitions {
		for _, n := range partitionCounts {
			recs = append(recs, &kgo.Record{Topic: fmt.Sprintf("p%d", n), Key: row.key, Value: []byte("v")})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs := producer.Produce(ctx, cl, recs...)
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, row := range javaPartitions {
		for j, n := range partitionCounts {
			if got := rs[i].Record.Partition; got != row.want[j] {
				t.Errorf("key %q, %d partitions: partition %d, Java's client picks %d", row.key, n, got, row.want[j])
			}
			i++
		}
	}
}
