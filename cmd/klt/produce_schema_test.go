package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// TestProduceWithSchemas produces JSON record lines encoded with an Avro and a Protobuf schema
// and framed as Confluent and Glue (compressed too) serialisers frame them, reads them back
// with klt consume --event, and decodes them with klt event decode and the same schema: the
// values come back as written.
func TestProduceWithSchemas(t *testing.T) {
	const dir = "../../testdata/events/schema-registry/toolkit/"
	input := `{"key":"c-1","value":{"id":7,"customer":"c-1","amount":12.5,"paid":true}}
{"key":"c-2","value":{"id":8,"customer":"c-2","amount":0.25,"paid":false}}
`
	for _, tc := range []struct {
		name    string
		produce []string
		decode  []string
	}{
		{"avro confluent", []string{"--value-schema", dir + "order.avsc", "--wire", "confluent", "--value-schema-id", "7"},
			[]string{"--value-schema", dir + "order.avsc", "--wire", "confluent"}},
		{"protobuf glue zlib", []string{"--value-schema", dir + "order.proto", "--message", "Order", "--wire", "glue",
			"--value-schema-id", "b7b4a7f0-0f2b-4f3e-9a43-2b9a4ec0c9a1", "--compress"},
			[]string{"--value-schema", dir + "order.proto", "--message", "Order", "--wire", "glue"}},
		{"avro unframed", []string{"--value-schema", dir + "order.avsc"}, []string{"--value-schema", dir + "order.avsc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := startKafka(t, 1, "orders")
			brokers := strings.Join(cluster.ListenAddrs(), ",")
			r := klt(t, input, append([]string{"produce", "--brokers", brokers, "--no-tls", "--topic", "orders"}, tc.produce...)...)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Fatalf("produce: exit %d, stderr %q", r.code, r.stderr)
			}
			r = klt(t, "", "consume", "--brokers", brokers, "--no-tls", "--topic", "orders", "--from-beginning", "--max", "2", "--timeout", "5s", "--event")
			if r.code != base.ExitOK {
				t.Fatalf("consume: exit %d, stderr %q", r.code, r.stderr)
			}
			if strings.Contains(r.stdout, "c-1\\\",\\\"amount") {
				t.Fatal("the value went out as JSON text, not encoded")
			}
			r = klt(t, r.stdout, append([]string{"event", "decode"}, tc.decode...)...)
			if r.code != base.ExitOK {
				t.Fatalf("decode: exit %d, stdout %s, stderr %q", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 2 {
				t.Fatalf("decode printed %d lines:\n%s", len(lines), r.stdout)
			}
			for i, want := range []map[string]any{
				{"id": 7.0, "customer": "c-1", "amount": 12.5, "paid": true},
				{"id": 8.0, "customer": "c-2", "amount": 0.25, "paid": false},
			} {
				var line struct {
					Key   string
					Value map[string]any
				}
				if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
					t.Fatalf("line %d: %v: %s", i, err, lines[i])
				}
				v := line.Value
				if s, ok := v["id"].(string); ok && s == map[int]string{0: "7", 1: "8"}[i] { // protojson writes int64 as a string
					v["id"] = want["id"]
				}
				if _, ok := v["paid"]; !ok && want["paid"] == false { // proto3 leaves false out
					v["paid"] = false
				}
				got, _ := json.Marshal(v)
				exp, _ := json.Marshal(want)
				if string(got) != string(exp) || line.Key != want["customer"] {
					t.Errorf("record %d: key %q value %s, want %q %s", i, line.Key, got, want["customer"], exp)
				}
			}
		})
	}
}

// A line whose value the schema cannot encode stops everything before anything is sent, and
// the flags that need a schema or an ID say so.
func TestProduceWithSchemasRefuses(t *testing.T) {
	const avsc = "../../testdata/events/schema-registry/toolkit/order.avsc"
	cluster := startKafka(t, 1, "orders")
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	baseArgs := []string{"produce", "--brokers", brokers, "--no-tls", "--topic", "orders"}
	r := klt(t, `{"value":{"id":"not a number"}}`+"\n", append(baseArgs, "--value-schema", avsc)...)
	if r.code != base.ExitFail || !strings.Contains(r.stderr, ":1:") {
		t.Errorf("bad value: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--wire", "confluent"}, "--wire needs --value-schema"},
		{[]string{"--value-schema", avsc, "--wire", "confluent"}, "give --value-schema-id"},
		{[]string{"--value-schema", avsc, "--value-schema-id", "3"}, "say which with --wire"},
		{[]string{"--value-schema", avsc, "--wire", "confluent", "--value-schema-id", "3", "--compress"}, "--compress is for --wire glue"},
	} {
		r := klt(t, `{"value":{}}`+"\n", append(baseArgs, tc.args...)...)
		if r.code != base.ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r = klt(t, "", "consume", "--brokers", brokers, "--no-tls", "--topic", "orders", "--from-beginning", "--max", "1", "--timeout", "1s")
	if strings.TrimSpace(r.stdout) != "" {
		t.Errorf("something was produced: %s", r.stdout)
	}
}
