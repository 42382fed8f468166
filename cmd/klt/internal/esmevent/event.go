package esmevent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// SourceOptions checks --source and --arn and turns them into Builder options.
func SourceOptions(source, arn string) ([]kafkaeventtest.BuilderOption, error) {
	switch source {
	case "msk":
		opts := []kafkaeventtest.BuilderOption{kafkaeventtest.WithEventSource(kafkaevent.SourceMSK)}
		if arn != "" {
			if !strings.HasPrefix(arn, "arn:") {
				return nil, fmt.Errorf("--arn: want an ARN such as arn:aws:kafka:REGION:ACCOUNT:cluster/NAME/UUID, got %q", arn)
			}
			opts = append(opts, kafkaeventtest.WithEventSourceARN(arn))
		}
		return opts, nil
	case "self-managed":
		if arn != "" {
			return nil, errors.New("--arn: a self-managed Kafka event has no eventSourceArn; use --source msk")
		}
		return []kafkaeventtest.BuilderOption{kafkaeventtest.WithEventSource(kafkaevent.SourceSelfManaged)}, nil
	}
	return nil, fmt.Errorf("--source: want msk or self-managed, got %q", source)
}

// BuildEvent makes the event of recs. Every record has its offset (readRecords assigned the
// missing ones); records without a timestamp get the Builder's automatic one.
func BuildEvent(recs []jsonl.Record, opts []kafkaeventtest.BuilderOption) *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder(opts...)
	for i := range recs {
		lr := &recs[i]
		r := &lr.Record
		ro := []kafkaeventtest.RecordOption{kafkaeventtest.WithKey(r.Key), kafkaeventtest.WithOffset(r.Offset)}
		if lr.HasTimestamp {
			ro = append(ro, kafkaeventtest.WithTimestamp(r.Timestamp))
		}
		if lr.HasTimestampType {
			ro = append(ro, kafkaeventtest.WithTimestampType(r.TimestampType))
		}
		for _, h := range r.Headers {
			ro = append(ro, kafkaeventtest.WithHeader(h.Key, h.Value))
		}
		if s := r.KeySchema; s != nil {
			ro = append(ro, kafkaeventtest.WithKeySchemaMetadata(s.DataFormat, s.SchemaID))
		}
		if s := r.ValueSchema; s != nil {
			ro = append(ro, kafkaeventtest.WithValueSchemaMetadata(s.DataFormat, s.SchemaID))
		}
		b.Add(r.Topic, r.Partition, r.Value, ro...)
	}
	return b.Event()
}
