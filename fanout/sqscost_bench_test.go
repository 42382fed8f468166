//go:build linux

package fanout

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// BenchmarkSQSCost splits what a call to local-aws-sqs costs, the server BenchmarkDispatch
// sends to, which runs on the same cores as the dispatcher: each iteration sends 100 calls,
// one at a time, to a new queue (as BenchmarkDispatch does per Dispatch), and the benchmark
// reports the server's CPU time per call and per entry (read from /proc/PID/stat of the node
// process, in clock ticks of 10 ms: run at least -benchtime 5x) and this process's (the SDK,
// net/http, the runtime; the entries are built before), for SendMessage and
// SendMessageBatch calls of 1, 5 and 10 entries of BenchmarkDispatch's records (about 200-byte
// JSON values), and of 10 entries of 10,000-byte values. Per request is what a call of one
// entry costs less a tenth of the step from 1 to 10 entries, per entry that step, per byte
// the step from small to large values: see docs/performance.md, "## fanout".
//
// With FANOUT_SQS_ENDPOINT set (http://127.0.0.1:PORT), it sends to that server instead, one
// started by hand, say under node --cpu-prof, and reports the client's figures only.
func BenchmarkSQSCost(b *testing.B) {
	var client *sqs.Client
	var server []int // the server's processes; none when it is not ours
	if ep := os.Getenv("FANOUT_SQS_ENDPOINT"); ep != "" {
		client = sqs.NewFromConfig(standin.ClientConfig(standin.Region), func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	} else {
		before := descendants(os.Getpid())
		client = standintest.StartSQS(b).Client()
		for _, p := range descendants(os.Getpid()) {
			if !slices.Contains(before, p) {
				server = append(server, p)
			}
		}
		if len(server) == 0 {
			b.Fatal("found no process of the SQS server under this one")
		}
	}
	queues, offset := 0, int64(0)
	// Warm the server up first (node compiles its hot code as it runs): the first shapes
	// would otherwise pay for it.
	for _, name := range []string{"cost-warm", "cost-warm.fifo"} {
		u, err := standin.CreateQueue(context.Background(), client, name, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 300 {
			es := make([]types.SendMessageBatchRequestEntry, 1+i%10)
			for k := range es {
				offset++
				es[k] = costEntry(b, offset, 0, strings.HasSuffix(name, ".fifo"))
				es[k].Id = &entryIDs[k]
			}
			sendCost(b, client, u, i%2 == 0, es)
		}
	}
	for _, fifo := range []bool{false, true} {
		queue := "standard"
		if fifo {
			queue = "fifo"
		}
		for _, shape := range []struct {
			name        string
			single      bool
			entries, kb int
		}{{"op=SendMessage", true, 1, 0}, {"op=batch/entries=1", false, 1, 0}, {"op=batch/entries=5", false, 5, 0},
			{"op=batch/entries=10", false, 10, 0}, {"op=batch/entries=10/value=10KB", false, 10, 10}} {
			b.Run("queue="+queue+"/"+shape.name, func(b *testing.B) {
				var sent int
				var serverCPU, clientCPU time.Duration
				for b.Loop() {
					b.StopTimer()
					queues++
					name := fmt.Sprintf("cost-%d", queues)
					if fifo {
						name += ".fifo"
					}
					u, err := standin.CreateQueue(context.Background(), client, name, nil)
					if err != nil {
						b.Fatal(err)
					}
					calls := make([][]types.SendMessageBatchRequestEntry, 100)
					for c := range calls {
						calls[c] = make([]types.SendMessageBatchRequestEntry, shape.entries)
						for k := range calls[c] {
							offset++
							calls[c][k] = costEntry(b, offset, shape.kb, fifo)
							calls[c][k].Id = &entryIDs[k]
						}
					}
					s0, c0 := cpuOf(b, server), selfCPU()
					b.StartTimer()
					for _, es := range calls {
						sendCost(b, client, u, shape.single, es)
					}
					b.StopTimer()
					serverCPU += cpuOf(b, server) - s0
					clientCPU += selfCPU() - c0
					sent += 100
					b.StartTimer()
				}
				us := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }
				if server != nil {
					b.ReportMetric(us(serverCPU, sent), "server-µs/call")
					b.ReportMetric(us(serverCPU, sent*shape.entries), "server-µs/entry")
				}
				b.ReportMetric(us(clientCPU, sent), "client-µs/call")
				b.ReportMetric(us(clientCPU, sent*shape.entries), "client-µs/entry")
			})
		}
	}
}

// costEntry is the entry of a record like BenchmarkDispatch's, at offset, its value about
// kb thousand bytes when kb is not 0.
func costEntry(b *testing.B, offset int64, kb int, fifo bool) types.SendMessageBatchRequestEntry {
	key := fmt.Sprintf("customer-%d", offset%100)
	note := strings.Repeat("x", 150)
	if kb > 0 {
		note = strings.Repeat("x", kb*1000)
	}
	r := &kafkaevent.Record{Topic: "orders", Partition: int32(offset % 8), Offset: offset, Timestamp: time.Now(), TimestampType: kafkaevent.CreateTime,
		Key: []byte(key), Value: fmt.Appendf(nil, `{"order":%d,"customer":%q,"note":%q}`, offset, key, note)}
	e, _, err := entry(r, fifo, nil)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// sendCost sends es in one SendMessageBatch call, or its one entry with SendMessage.
func sendCost(b *testing.B, client *sqs.Client, queueURL string, single bool, es []types.SendMessageBatchRequestEntry) {
	if single {
		e := es[0]
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: e.MessageBody,
			MessageAttributes: e.MessageAttributes, MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId})
		if err != nil {
			b.Fatal(err)
		}
		return
	}
	out, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: es})
	if err == nil && len(out.Failed) > 0 {
		err = fmt.Errorf("%s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	if err != nil {
		b.Fatal(err)
	}
}

// descendants returns the processes under pid, read from /proc.
func descendants(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(p); len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	var walk func(int)
	walk = func(pp int) {
		for p, q := range parent {
			if q == pp {
				out = append(out, p)
				walk(p)
			}
		}
	}
	walk(pid)
	return out
}

// procStat returns the fields of /proc/PID/stat after the command's name: state, ppid, ...
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// cpuOf is the CPU time (user and system) the processes have used, at Linux's USER_HZ of
// 100 ticks a second.
func cpuOf(b *testing.B, pids []int) time.Duration {
	var d time.Duration
	for _, p := range pids {
		f := procStat(p)
		if len(f) < 13 {
			b.Fatalf("/proc/%d/stat: the server process is gone", p)
		}
		u, _ := strconv.Atoi(f[11])
		s, _ := strconv.Atoi(f[12])
		d += time.Duration(u+s) * 10 * time.Millisecond
	}
	return d
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
