package fanout

import (
	"testing"
)

// BenchmarkEntry builds the messages of BenchmarkDispatch's 1,000 records (about 200-byte
// JSON values, a key; queue=fifo adds the group and deduplication IDs) one by one with
// entry, as the naive loop of BenchmarkDispatch does: the dispatcher's own cost of a record
// and its allocations, SendMessageBatch aside. Dispatch builds them with one encoder a run;
// BenchmarkDispatch measures that.
func BenchmarkEntry(b *testing.B) {
	ev := benchEvent(8, 125, 100)
	for _, fifo := range []bool{false, true} {
		queue := "standard"
		if fifo {
			queue = "fifo"
		}
		b.Run("queue="+queue, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for p := range ev.Partitions {
					for i := range ev.Partitions[p].Records {
						if _, _, err := entry(&ev.Partitions[p].Records[i], fifo, nil); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}
