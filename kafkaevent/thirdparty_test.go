package kafkaevent_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// thirdPartyDir holds the Kafka event fixtures of aws-lambda-go, aws-lambda-java-libs and
// Powertools for AWS Lambda (Java, TypeScript), vendored with their licences; SOURCES.md there
// says where each came from.
const thirdPartyDir = "testdata/fixtures"

// thirdPartySources reads SOURCES.md: for each vendored file, the repository paths and commits
// it was found at. Every file must be listed, and every listed file must exist.
func thirdPartySources(t *testing.T) map[string][]string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(thirdPartyDir, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| \\[([^]]+)\\]\\([^)]+\\) \\| `([^`]+)` \\| `([0-9a-f]{12})` \\|$")
	src := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(string(md), -1) {
		src[m[1]] = append(src[m[1]], m[2]+"/"+m[3]+"@"+m[4])
	}
	files, _ := filepath.Glob(filepath.Join(thirdPartyDir, "*", "*.json"))
	for _, f := range files {
		rel, _ := filepath.Rel(thirdPartyDir, f)
		if src[filepath.ToSlash(rel)] == nil {
			t.Errorf("%s is not listed in SOURCES.md", rel)
		}
	}
	for rel := range src {
		if _, err := os.Stat(filepath.Join(thirdPartyDir, rel)); err != nil {
			t.Errorf("SOURCES.md lists %s: %v", rel, err)
		}
	}
	return src
}

// TestThirdPartyFixtures decodes every vendored fixture with Parse and with aws-lambda-go
// (events.KafkaEvent and encoding/base64), and compares them field by field. Parse accepts
// every one; the two that aws-lambda-go rejects (header values written as base64 strings) give
// records with Err naming the header. Each event also survives MarshalJSON and FromAWS.
func TestThirdPartyFixtures(t *testing.T) {
	src := thirdPartySources(t)
	origins, compared := 0, 0
	for _, rel := range slices.Sorted(mapKeys(src)) {
		origins += len(src[rel])
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(thirdPartyDir, rel))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := kafkaevent.Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var ke events.KafkaEvent
			if awsErr := json.Unmarshal(data, &ke); awsErr != nil {
				// aws-lambda-go fails on the whole event; Parse fails only the records.
				n := 0
				for r := range ev.All() {
					var e *kafkaevent.Error
					if errors.As(r.Err, &e) && strings.Contains(e.Path, ".headers[") {
						n++
					}
				}
				if n == 0 {
					t.Fatalf("aws-lambda-go: %v; Parse found no bad header", awsErr)
				}
				checkRoundTrip(t, data, true)
				return
			}
			compared += len(src[rel])
			compareThirdParty(t, data, ev, &ke)
			checkRoundTrip(t, data, true)
			fa, err := kafkaevent.FromAWS(&ke)
			if err != nil {
				t.Fatalf("FromAWS: %v", err)
			}
			if got, want := ids(fa), ids(ev); !slices.Equal(got, want) {
				t.Errorf("FromAWS partition IDs %q, Parse %q", got, want)
			}
		})
	}
	// 48 origins (36 distinct files) at the time of vendoring; 46 of them aws-lambda-go reads.
	if origins < 48 || compared < 46 {
		t.Errorf("%d fixture origins, %d compared with aws-lambda-go; want at least 48 and 46", origins, compared)
	}
	t.Logf("%d fixture origins, %d compared field by field with aws-lambda-go", origins, compared)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// schemaView is what encoding/json reads of the schema metadata, which aws-lambda-go drops.
type schemaView struct {
	Records map[string][]struct {
		KeySchemaMetadata   *struct{ DataFormat, SchemaID string } `json:"keySchemaMetadata"`
		ValueSchemaMetadata *struct{ DataFormat, SchemaID string } `json:"valueSchemaMetadata"`
	} `json:"records"`
}

// compareThirdParty checks ev, from Parse, against ke, from aws-lambda-go, key by key of the
// records object: the partition IDs are the keys as written, and every record field agrees.
// aws-lambda-go reads absent, null and "" keys and values all as "", so nil and empty compare
// equal; it reads timestamp -1 as -1 ms where Parse gives the zero time.
func compareThirdParty(t *testing.T, data []byte, ev *kafkaevent.Event, ke *events.KafkaEvent) {
	t.Helper()
	src := ke.EventSource
	if src == "aws:SelfManagedKafka" {
		src = string(kafkaevent.SourceSelfManaged)
	}
	if string(ev.Source) != src || ev.SourceARN != ke.EventSourceARN {
		t.Errorf("source %q %q, aws-lambda-go %q %q", ev.Source, ev.SourceARN, ke.EventSource, ke.EventSourceARN)
	}
	var servers []string
	for s := range strings.SplitSeq(ke.BootstrapServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	if !slices.Equal(ev.BootstrapServers, servers) {
		t.Errorf("bootstrap servers %q, aws-lambda-go %q", ev.BootstrapServers, ke.BootstrapServers)
	}
	var sv schemaView
	if err := json.Unmarshal(data, &sv); err != nil {
		t.Fatal(err)
	}
	if len(ev.Partitions) != len(ke.Records) {
		t.Fatalf("%d partitions, aws-lambda-go %d keys", len(ev.Partitions), len(ke.Records))
	}
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		krs, ok := ke.Records[p.ID()]
		if !ok {
			t.Errorf("partition ID %q is not a key of the event", p.ID())
			continue
		}
		if len(p.Records) != len(krs) {
			t.Errorf("%s: %d records, aws-lambda-go %d", p.ID(), len(p.Records), len(krs))
			continue
		}
		for j := range krs {
			r, kr := &p.Records[j], &krs[j]
			at := p.ID() + "[" + string(rune('0'+j)) + "]"
			if r.Err != nil {
				t.Errorf("%s: Err = %v", at, r.Err)
			}
			if r.Topic != kr.Topic || int64(r.Partition) != kr.Partition || r.Offset != kr.Offset {
				t.Errorf("%s: %s/%d@%d, aws-lambda-go %s/%d@%d", at, r.Topic, r.Partition, r.Offset, kr.Topic, kr.Partition, kr.Offset)
			}
			if ms := kr.Timestamp.UnixMilli(); r.Timestamp.UnixMilli() != ms && !(r.Timestamp.IsZero() && ms == -1) {
				t.Errorf("%s: timestamp %v, aws-lambda-go %d ms", at, r.Timestamp, ms)
			}
			if r.TimestampType != kr.TimestampType {
				t.Errorf("%s: timestampType %q, aws-lambda-go %q", at, r.TimestampType, kr.TimestampType)
			}
			key, err := base64.StdEncoding.DecodeString(kr.Key)
			if err != nil {
				t.Fatalf("%s: aws-lambda-go key: %v", at, err)
			}
			value, err := base64.StdEncoding.DecodeString(kr.Value)
			if err != nil {
				t.Fatalf("%s: aws-lambda-go value: %v", at, err)
			}
			if !bytes.Equal(r.Key, key) || !bytes.Equal(r.Value, value) {
				t.Errorf("%s: key/value %q/%q, aws-lambda-go %q/%q", at, r.Key, r.Value, key, value)
			}
			var headers []kafkaevent.Header
			for _, h := range kr.Headers {
				for _, name := range slices.Sorted(mapKeys(h)) {
					headers = append(headers, kafkaevent.Header{Key: name, Value: []byte(h[name])})
				}
			}
			if len(r.Headers) != len(headers) {
				t.Errorf("%s: %d headers, aws-lambda-go %d", at, len(r.Headers), len(headers))
			} else {
				for k := range headers {
					if r.Headers[k].Key != headers[k].Key || !bytes.Equal(r.Headers[k].Value, headers[k].Value) {
						t.Errorf("%s: header %d %q=%v, aws-lambda-go %q=%v", at, k, r.Headers[k].Key, r.Headers[k].Value, headers[k].Key, headers[k].Value)
					}
				}
			}
			js := sv.Records[p.ID()][j]
			for _, c := range []struct {
				got  *kafkaevent.SchemaMetadata
				want *struct{ DataFormat, SchemaID string }
			}{{r.KeySchema, js.KeySchemaMetadata}, {r.ValueSchema, js.ValueSchemaMetadata}} {
				if (c.got == nil) != (c.want == nil) || c.got != nil && (c.got.DataFormat != c.want.DataFormat || c.got.SchemaID != c.want.SchemaID) {
					t.Errorf("%s: schema metadata %+v, encoding/json %+v", at, c.got, c.want)
				}
			}
		}
	}
}

// Lambda keys records "topic-N"; fixtures written by hand do not always: "mytopic-01", "topic1",
// "mytopic-0" over a record of partition 12. Each record's own topic and partition stand, and
// each key stays one Partition whose ID is the key as written, so that a partial-batch response
// names the partition the way the event did.
func TestParseKeysThatDoNotMatchRecords(t *testing.T) {
	data := `{"eventSource":"aws:kafka","records":{` +
		`"mytopic-0":[{"topic":"mytopic","partition":12,"offset":1},{"topic":"mytopic","partition":3,"offset":2}],` +
		`"mytopic-01":[{"topic":"mytopic","partition":1,"offset":5}],` +
		`"topic1":[{"topic":"topic1","partition":0,"offset":7,"value":"YQ=="}],` +
		`"orders-4":[{"partition":4,"offset":9}]}}`
	for _, parse := range []func([]byte) (*kafkaevent.Event, error){kafkaevent.Parse, kafkaevent.ParseGeneral} {
		ev, err := parse([]byte(data))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		type rec struct {
			partID, recID string
			offset        int64
		}
		var got []rec
		for i := range ev.Partitions {
			p := &ev.Partitions[i]
			for j := range p.Records {
				got = append(got, rec{p.ID(), p.Records[j].PartitionID(), p.Records[j].Offset})
			}
		}
		want := []rec{
			{"mytopic-01", "mytopic-1", 5},
			{"mytopic-0", "mytopic-12", 1}, // the key's records stay together, in order,
			{"mytopic-0", "mytopic-3", 2},  // whatever partition each names
			{"orders-4", "orders-4", 9},    // a record without topic takes the key's
			{"topic1", "topic1-0", 7},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("records\n got %v\nwant %v", got, want)
		}
		if p := ev.Partitions[1]; p.Topic != "mytopic" || p.Number != 12 {
			t.Errorf("partition %q: Topic, Number = %q, %d; want the first record's", p.ID(), p.Topic, p.Number)
		}
		// MarshalJSON and ToAWS write the keys as they were.
		out, _ := ev.MarshalJSON()
		var w struct{ Records map[string]json.RawMessage }
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatal(err)
		}
		keys := slices.Sorted(mapKeys(w.Records))
		if want := []string{"mytopic-0", "mytopic-01", "orders-4", "topic1"}; !slices.Equal(keys, want) {
			t.Errorf("MarshalJSON keys %q, want %q", keys, want)
		}
		checkRoundTrip(t, []byte(data), true)
		ke := kafkaevent.ToAWS(ev)
		if keys := slices.Sorted(mapKeys(ke.Records)); !slices.Equal(keys, []string{"mytopic-0", "mytopic-01", "orders-4", "topic1"}) {
			t.Errorf("ToAWS keys %q", keys)
		}
		fa, err := kafkaevent.FromAWS(ke)
		if err != nil {
			t.Fatalf("FromAWS: %v", err)
		}
		if !slices.Equal(ids(fa), ids(ev)) {
			t.Errorf("FromAWS IDs %q, Parse %q", ids(fa), ids(ev))
		}
	}
}

// "aws:SelfManagedKafka", a spelling in Powertools for TypeScript's fixtures, is self-managed
// Kafka, for Parse and for FromAWS.
func TestParseSelfManagedOldSpelling(t *testing.T) {
	data := []byte(`{"eventSource":"aws:SelfManagedKafka","records":{"t-0":[{"topic":"t","partition":0,"offset":1}]}}`)
	ev, err := kafkaevent.Parse(data)
	if err != nil || ev.Source != kafkaevent.SourceSelfManaged {
		t.Fatalf("Parse = %v, %v; want SourceSelfManaged", ev, err)
	}
	fa, err := kafkaevent.FromAWS(&events.KafkaEvent{EventSource: "aws:SelfManagedKafka"})
	if err != nil || fa.Source != kafkaevent.SourceSelfManaged {
		t.Fatalf("FromAWS = %v, %v; want SourceSelfManaged", fa, err)
	}
}

// Invalid base64 fails the record, never the event, wherever the record stands, here under a
// key that does not match it.
func TestInvalidBase64IsARecordError(t *testing.T) {
	for _, v := range []string{`"abc"`, `"-_-_"`, `"YQ==YQ=="`, `"Y\nQ=="`, `"\u00ff"`, `7`, `{}`} {
		data := `{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":9,"offset":1,"value":` + v + `},{"topic":"t","partition":9,"offset":2}]}}`
		ev, err := kafkaevent.Parse([]byte(data))
		if err != nil {
			t.Errorf("value %s: Parse: %v", v, err)
			continue
		}
		rs := ev.Partitions[0].Records
		var e *kafkaevent.Error
		if !errors.As(rs[0].Err, &e) || e.Path != `records["t-0"][0].value` || rs[0].Offset != 1 || rs[1].Err != nil {
			t.Errorf("value %s: records %+v", v, rs)
		}
	}
	fa, err := kafkaevent.FromAWS(&events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{
		"t-0": {{Topic: "t", Partition: 9, Offset: 1, Key: "abc"}}}})
	if err != nil || fa.Partitions[0].Records[0].Err == nil {
		t.Errorf("FromAWS = %v, %v; want a record with Err", fa, err)
	}
}

// A payload that starts with a UTF-8 byte order mark (an editor's doing) gets an error that
// says so, not "invalid character".
func TestParseNamesBOM(t *testing.T) {
	_, err := kafkaevent.Parse([]byte("\xef\xbb\xbf" + `{"eventSource":"aws:kafka","records":{}}`))
	var e *kafkaevent.Error
	if !errors.As(err, &e) || e.Offset != 0 || !strings.Contains(e.Msg, "byte order mark") {
		t.Fatalf("Parse = %v; want an *Error naming the byte order mark", err)
	}
}

// Error messages quote what they show of the payload with escapes, on one line.
func TestParseErrorsQuoteText(t *testing.T) {
	for _, in := range []string{
		"{\"eventSource\":\"aws:kafka\",\"records\":{\"t-0\":[{\"offset\":[\n1]}]}}",
		"{\"eventSource\":\"aws:kafka\",\"records\":{\"t-0\":[{\"offset\":\"\x7f\xe2\x80\xa8\"}]}}",
		"{\"eventSource\":\"aws:kafka\",\"records\":{\"t-0\":[{\"offset\":1,\"a\\nb\":[1,]}]}}",
		"{\"eventSource\":\"aws:kafka\",\"records\":{\"t-0\":[{\"offset\":1,\"headers\":[{\"a\\nb\":7}]}]}}",
		"{\"eventSource\":\"aws:kafka\",\"x\\u0000\":[1,],\"records\":{}}",
		"\xff\xfe{}",
	} {
		ev, err := kafkaevent.Parse([]byte(in))
		if err == nil {
			for r := range ev.All() {
				err = r.Err
			}
		}
		if err == nil {
			t.Errorf("Parse(%q): no error", in)
			continue
		}
		oneLine(t, err)
	}
}
