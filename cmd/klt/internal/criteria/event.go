package criteria

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// TestRecord is one record of the event under test: a Kafka record or an SQS message.
type TestRecord struct {
	Id    string // topic-N@offset, or the messageId
	kafka *kafkaevent.Record
	sqs   *events.SQSMessage
}

// Explain evaluates the record against c, shaped as Lambda shapes its source's records.
func (r *TestRecord) Explain(c *filter.Criteria) filter.Verdict {
	if r.kafka != nil {
		return c.ExplainKafka(r.kafka)
	}
	return c.ExplainSQS(r.sqs)
}

// Err returns the error of a malformed Kafka record.
func (r *TestRecord) Err() error {
	if r.kafka != nil {
		return r.kafka.Err
	}
	return nil
}

// Label names the record i in messages: "#1 orders-0@16".
func (r *TestRecord) Label(i int) string { return "#" + strconv.Itoa(i) + " " + r.Id }

// SourceKind returns the kind of event a SAM event Type delivers, or the Type itself for
// sources klt does not read.
func SourceKind(samType string) string {
	switch samType {
	case "MSK", "SelfManagedKafka":
		return input.KindKafka
	}
	return samType
}

// ReadTestEvent reads a Kafka or an SQS event and returns its records in the order a function
// sees them. It tells the two apart by their members: a Kafka event has "eventSource" and
// "records", an SQS event "Records". A member given twice anywhere in it is an error: which
// one counts would depend on the reader.
func ReadTestEvent(name string, data []byte) (kind string, recs []TestRecord, err error) {
	if err := jsondup.CheckDuplicateMembers(name, data); err != nil {
		return "", nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		if jerr := JSONSyntaxError(name, data, err); jerr != nil {
			return "", nil, jerr
		}
		return "", nil, fmt.Errorf("%s: want a Kafka or an SQS event, a JSON object", name)
	}
	_, hasSource := top["eventSource"]
	_, hasKafkaRecords := top["records"]
	_, hasSQSRecords := top["Records"]
	switch {
	case hasSource || hasKafkaRecords:
		ev, err := kafkaevent.Parse(data)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", name, err)
		}
		for r := range ev.All() {
			recs = append(recs, TestRecord{Id: clitext.OneLine(r.PartitionID()) + "@" + strconv.FormatInt(r.Offset, 10), kafka: r})
		}
		kind = input.KindKafka
	case hasSQSRecords:
		var ev events.SQSEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return "", nil, fmt.Errorf("%s: not an SQS event: %v", name, err)
		}
		for i := range ev.Records {
			m := &ev.Records[i]
			if m.EventSource != "aws:sqs" && m.EventSource != "" {
				return "", nil, fmt.Errorf("%s: Records[%d].eventSource is %q; an SQS event has aws:sqs", name, i, m.EventSource)
			}
			id := clitext.OneLine(m.MessageId)
			if id == "" {
				id = "Records[" + strconv.Itoa(i) + "]"
			}
			recs = append(recs, TestRecord{Id: id, sqs: m})
		}
		kind = input.KindSQS
	default:
		return "", nil, fmt.Errorf("%s: neither a Kafka event (with eventSource aws:kafka or SelfManagedKafka and records) nor an SQS event (with Records)", name)
	}
	if len(recs) == 0 {
		return "", nil, fmt.Errorf("%s: no records; Lambda never sends an event without one", name)
	}
	return kind, recs, nil
}

// JSONSyntaxError returns err as "NAME:LINE:COLUMN: invalid JSON: ..." when it is a syntax
// error, and nil otherwise.
func JSONSyntaxError(name string, data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) || len(bytes.TrimSpace(data)) == 0 {
			return fmt.Errorf("%s: invalid JSON: unexpected end of input", name)
		}
		return nil
	}
	line, col := jsondup.LineCol(data, se.Offset-1)
	return fmt.Errorf("%s:%d:%d: invalid JSON: %v", name, line, col, se)
}
