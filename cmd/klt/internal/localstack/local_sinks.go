package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/internal/samstack"
)

// recordKey names a Kafka record as the orders API's Idempotency-Key does:
// topic-partition-offset.
func recordKey(topic string, partition int32, offset int64) string {
	return topic + "-" + strconv.Itoa(int(partition)) + "-" + strconv.FormatInt(offset, 10)
}

// deadLetter is a record found in a queue where records go when they are given up on: a
// batch sink's failure queue, a dead-letter queue, an on-failure destination.
type deadLetter struct {
	queue string // logical ID
	key   string // recordKey
	at    time.Time
	why   string // the error or condition, when the message says
}

// drains reads, and deletes, every message of the template's queues that no mapping reads
// (failure queues, dead-letter queues, on-failure destinations), and finds the records in
// them. A message klt cannot read is kept as unreadable, never dropped: it is reported.
type drains struct {
	client *sqs.Client

	mu         sync.Mutex
	found      []deadLetter
	ranges     []ofdRange // on-failure destination batches: offsets first..last of a partition
	unreadable []string   // queue: reason
}

// ofdRange is the range of offsets of one partition an on-failure destination record names.
type ofdRange struct {
	queue, function, topicPartition, condition string
	first, last                                int64
	at                                         time.Time
}

// run drains queue (logical ID) at url until ctx is done.
func (d *drains) run(ctx context.Context, queue, url string) {
	for ctx.Err() == nil {
		out, err := d.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() == nil {
				d.note(queue, fmt.Sprintf("ReceiveMessage: %v", err))
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			d.read(queue, m)
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(del) > 0 {
			if _, err := d.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil && ctx.Err() == nil {
				d.note(queue, fmt.Sprintf("DeleteMessageBatch: %v", err))
			}
		}
	}
}

func (d *drains) note(queue, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unreadable = append(d.unreadable, queue+": "+msg)
}

// read finds the record(s) in one message: a batch sink's envelope (of a Kafka record, or of
// an SQS message carrying one, as fanout sends them), a Kafka on-failure destination record,
// or a message fanout sent (in a dead-letter queue).
func (d *drains) read(queue string, m types.Message) {
	now := time.Now()
	body := aws.ToString(m.Body)
	if env, err := batch.ReadEnvelope([]byte(body)); err == nil {
		switch {
		case env.Source == "kafka":
			d.add(deadLetter{queue, recordKey(env.Topic, env.Partition, env.Offset), now, env.Error})
			return
		case env.Message != nil:
			if r, err := fanout.Record(*env.Message); err == nil {
				d.add(deadLetter{queue, recordKey(r.Topic, r.Partition, r.Offset), now, env.Error})
				return
			}
		}
	}
	var ofd struct {
		RequestContext struct {
			Condition   string `json:"condition"`
			FunctionArn string `json:"functionArn"`
		} `json:"requestContext"`
		KafkaBatchInfo *struct {
			RecordsInfo map[string]struct {
				First string `json:"firstRecordOffset"`
				Last  string `json:"lastRecordOffset"`
			} `json:"recordsInfo"`
		} `json:"KafkaBatchInfo"`
	}
	if json.Unmarshal([]byte(body), &ofd) == nil && ofd.KafkaBatchInfo != nil {
		for tp, ri := range ofd.KafkaBatchInfo.RecordsInfo {
			first, err1 := strconv.ParseInt(ri.First, 10, 64)
			last, err2 := strconv.ParseInt(ri.Last, 10, 64)
			if err1 != nil || err2 != nil {
				d.note(queue, fmt.Sprintf("on-failure record with offsets %q..%q", ri.First, ri.Last))
				continue
			}
			d.mu.Lock()
			fn := ofd.RequestContext.FunctionArn[strings.LastIndexByte(ofd.RequestContext.FunctionArn, ':')+1:]
			d.ranges = append(d.ranges, ofdRange{queue, fn, tp, ofd.RequestContext.Condition, first, last, now})
			d.mu.Unlock()
		}
		return
	}
	if r, err := fanout.Record(esm.SQSMessage(m, "", samstack.LocalRegion)); err == nil {
		d.add(deadLetter{queue, recordKey(r.Topic, r.Partition, r.Offset), now, "receive count reached maxReceiveCount"})
		return
	} else {
		d.note(queue, fmt.Sprintf("message %s: not a sink envelope, on-failure record or fanout message: %v", aws.ToString(m.MessageId), err))
	}
}

func (d *drains) add(dl deadLetter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.found = append(d.found, dl)
}

// snapshot returns what the drains found so far.
func (d *drains) snapshot() ([]deadLetter, []ofdRange, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]deadLetter(nil), d.found...), append([]ofdRange(nil), d.ranges...), append([]string(nil), d.unreadable...)
}

// splitTopicPartition splits "topic-N" at its last dash.
func splitTopicPartition(tp string) (string, int32, bool) {
	i := strings.LastIndexByte(tp, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(tp[i+1:], 10, 32)
	return tp[:i], int32(n), err == nil
}
