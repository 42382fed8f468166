package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/esmevent"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// FuzzBuildLine feeds arbitrary input to the JSON Lines reader of "klt event build". It must
// never panic; every error must name the file and a line of the input; and whatever it accepts
// must survive the trip through Builder, MarshalJSON, Parse, decode and build's line reader
// unchanged.
//
// The seed corpus is in testdata/fuzz/FuzzBuildLine. Run with
//
//	go test ./cmd/klt -run '^$' -fuzz FuzzBuildLine -fuzztime 1m
func FuzzBuildLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.jsonl"
		recs, err := jsonl.ReadRecords(context.Background(), name, bytes.NewReader(data))
		if err != nil {
			checkLineErrors(t, err, name, bytes.Count(data, []byte("\n"))+1)
			return
		}
		if len(recs) == 0 {
			return
		}
		ev := esmevent.BuildEvent(recs, nil)
		checkBuilt(t, ev, recs)

		wire, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := kafkaevent.Parse(wire)
		if err != nil {
			t.Fatalf("Parse rejects what build wrote: %v\n%s", err, wire)
		}
		if !sameEvents(back, ev) {
			t.Fatalf("Parse read back a different event\nbuilt  %+v\nparsed %+v", ev, back)
		}
		for r := range back.All() {
			line, err := json.Marshal(jsonl.DecodedRecordOf(r))
			if err != nil {
				t.Fatal(err)
			}
			checkDecodedLine(t, string(line), r)
		}
	})
}

// checkLineErrors checks that every error err joins is about one of the lines of file name.
func checkLineErrors(t *testing.T, err error, name string, lines int) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var le *jsonl.LineError
		switch {
		case errors.As(e, &le):
			prefix := fmt.Sprintf("%s:%d: ", name, le.Line)
			if le.File != name || le.Line < 1 || le.Line > lines || !strings.HasPrefix(e.Error(), prefix) || le.Err == nil {
				t.Errorf("error %q does not name a line of %s (1 to %d)", e, name, lines)
			}
		case errors.Is(e, jsonl.ErrTooManyErrors):
			if !strings.HasPrefix(e.Error(), name+": ") {
				t.Errorf("error %q does not name %s", e, name)
			}
		default:
			t.Errorf("error %q (%T) is not about a line", e, e)
		}
	}
}

// checkBuilt checks that ev holds recs: per partition, in input order, with every field the
// lines gave.
func checkBuilt(t *testing.T, ev *kafkaevent.Event, recs []jsonl.Record) {
	t.Helper()
	byPart := make(map[string][]jsonl.Record)
	for _, lr := range recs {
		byPart[lr.Record.PartitionID()] = append(byPart[lr.Record.PartitionID()], lr)
	}
	if ev.Len() != len(recs) {
		t.Fatalf("event has %d records, input %d", ev.Len(), len(recs))
	}
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		in := byPart[p.ID()]
		if len(in) != len(p.Records) {
			t.Fatalf("%s: %d records, input %d", p.ID(), len(p.Records), len(in))
		}
		for j := range p.Records {
			got, want := p.Records[j], in[j].Record
			if !in[j].HasTimestamp {
				want.Timestamp = got.Timestamp // automatic
			}
			if !in[j].HasTimestampType {
				want.TimestampType = kafkaevent.CreateTime
			}
			if !sameRecords(&got, &want) {
				t.Fatalf("line %d became\n%+v\nwant\n%+v", in[j].Line, got, want)
			}
		}
	}
}

// sameEvents reports whether a and b hold the same envelope and records.
func sameEvents(a, b *kafkaevent.Event) bool {
	if a.Source != b.Source || a.SourceARN != b.SourceARN || !reflect.DeepEqual(a.BootstrapServers, b.BootstrapServers) ||
		len(a.Partitions) != len(b.Partitions) {
		return false
	}
	for i := range a.Partitions {
		pa, pb := &a.Partitions[i], &b.Partitions[i]
		if pa.Topic != pb.Topic || pa.Number != pb.Number || len(pa.Records) != len(pb.Records) {
			return false
		}
		for j := range pa.Records {
			if !sameRecords(&pa.Records[j], &pb.Records[j]) {
				return false
			}
		}
	}
	return true
}

// sameRecords reports whether a and b have the same fields, telling nil bytes from empty ones
// but not a nil header list from an empty one.
func sameRecords(a, b *kafkaevent.Record) bool {
	if a.Topic != b.Topic || a.Partition != b.Partition || a.Offset != b.Offset || !a.Timestamp.Equal(b.Timestamp) ||
		a.TimestampType != b.TimestampType || !sameBytes(a.Key, b.Key) || !sameBytes(a.Value, b.Value) ||
		len(a.Headers) != len(b.Headers) || (a.Err == nil) != (b.Err == nil) ||
		!reflect.DeepEqual(a.KeySchema, b.KeySchema) || !reflect.DeepEqual(a.ValueSchema, b.ValueSchema) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !sameBytes(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}
