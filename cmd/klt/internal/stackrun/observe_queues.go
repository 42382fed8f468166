package stackrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
)

// queueObserver reads the messages the functions send (SendMessage, SendMessageBatch, as
// the proxy saw them) into the ledger, each with the input record it carries: fanout's
// record attribute, or a batch sink's envelope (a failure queue's message, whose error is
// the effect's Failure). A message that carries neither is unattributed.
type queueObserver struct {
	l      *ledger.Ledger
	byName map[string]string // queue name (the URL's last segment) -> logical ID
	notes
}

func newQueueObserver(l *ledger.Ledger, queues map[string]string) *queueObserver {
	o := &queueObserver{l: l, byName: map[string]string{}}
	for id, u := range queues {
		o.byName[u[strings.LastIndexByte(u, '/')+1:]] = id
	}
	return o
}

// sent is one message of a send request.
type sent struct {
	ID         string // the batch entry's Id ("" for SendMessage)
	Body       string `json:"MessageBody"`
	Attributes map[string]struct {
		DataType    string
		StringValue *string
		BinaryValue []byte
	} `json:"MessageAttributes"`
	messageID string // from the answer
}

func (o *queueObserver) exchange(x faultproxy.Exchange) {
	if x.Fault != faultproxy.NoFault || x.Err != nil || x.Status != http.StatusOK {
		return // nothing was sent
	}
	var msgs []sent
	var url string
	switch x.Operation {
	case "SendMessage":
		var r struct {
			QueueURL string `json:"QueueUrl"`
			sent
		}
		var resp struct{ MessageId string }
		if err := json.Unmarshal(x.Request, &r); err != nil {
			o.add("SendMessage from %s: %v", x.Client, err)
			return
		}
		if err := json.Unmarshal(x.Response, &resp); err != nil {
			o.add("SendMessage's answer to %s: %v", x.Client, err)
			return
		}
		r.sent.messageID = resp.MessageId
		url, msgs = r.QueueURL, []sent{r.sent}
	case "SendMessageBatch":
		var r struct {
			QueueURL string `json:"QueueUrl"`
			Entries  []sent
		}
		var resp struct {
			Successful []struct{ Id, MessageId string }
		}
		if err := json.Unmarshal(x.Request, &r); err != nil {
			o.add("SendMessageBatch from %s: %v", x.Client, err)
			return
		}
		if err := json.Unmarshal(x.Response, &resp); err != nil {
			o.add("SendMessageBatch's answer to %s: %v", x.Client, err)
			return
		}
		ok := map[string]string{} // entry ID -> MessageId
		for _, s := range resp.Successful {
			ok[s.Id] = s.MessageId
		}
		url = r.QueueURL
		for _, e := range r.Entries {
			if id, sent := ok[e.ID]; sent {
				e.messageID = id
				msgs = append(msgs, e)
			}
		}
	default:
		return
	}
	queue := o.byName[url[strings.LastIndexByte(url, '/')+1:]]
	if queue == "" {
		queue = url
	}
	for _, m := range msgs {
		o.record(x.Client, queue, x.Operation, m, x.At.Add(x.Duration))
	}
}

// record writes one sent message into the ledger.
func (o *queueObserver) record(fn, queue, op string, m sent, at time.Time) {
	sum := sha256.Sum256([]byte(m.Body))
	e := ledger.Effect{Kind: ledger.EffectQueue, Resource: queue, Function: fn, Op: op, At: at, Body: capBody([]byte(m.Body)), ID: m.messageID,
		Target: hex.EncodeToString(sum[:8])}
	if a, ok := m.Attributes[fanout.RecordAttribute]; ok && a.StringValue != nil {
		id, err := recordOfAttribute(*a.StringValue)
		if err == nil {
			e.Record, e.Via = id, ledger.ViaRecordAttribute
			o.l.AddEffect(e)
			return
		}
		o.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectQueue, Resource: queue, At: at, Why: fmt.Sprintf("%s by %s: %v", op, fn, err)})
		return
	}
	if id, why, ok := recordOfEnvelope(m.Body); ok {
		e.Record, e.Via, e.Failure = id, ledger.ViaEnvelope, why
		o.l.AddEffect(e)
		return
	}
	o.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectQueue, Resource: queue, At: at,
		Why: fmt.Sprintf("%s by %s: neither a %s attribute nor a batch sink's envelope", op, fn, fanout.RecordAttribute)})
}

// recordOfEnvelope reads a batch sink's envelope: the Kafka record it holds, or the Kafka
// record the SQS message it holds carries (fanout's attribute), and the envelope's error.
func recordOfEnvelope(body string) (ledger.RecordID, string, bool) {
	env, err := batch.ReadEnvelope([]byte(body))
	if err != nil {
		return ledger.RecordID{}, "", false
	}
	why := env.Error
	if why == "" {
		why = "sent to the failure queue"
	}
	switch {
	case env.Source == "kafka" && env.Topic != "":
		return ledger.RecordID{Topic: env.Topic, Partition: env.Partition, Offset: env.Offset}, why, true
	case env.Message != nil:
		if id, ok := recordOfSQSMessage(*env.Message); ok {
			return id, why, true
		}
	}
	return ledger.RecordID{}, "", false
}

// recordOfSQSMessage reads fanout's record attribute of m.
func recordOfSQSMessage(m events.SQSMessage) (ledger.RecordID, bool) {
	a, ok := m.MessageAttributes[fanout.RecordAttribute]
	if !ok || a.StringValue == nil {
		return ledger.RecordID{}, false
	}
	id, err := recordOfAttribute(*a.StringValue)
	return id, err == nil
}
