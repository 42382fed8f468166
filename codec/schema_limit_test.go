package codec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"

	"github.com/kafkalambda/toolkit"
)

// realSchemas are the schemas of the project's fixtures, samples and benchmarks, and the SAM
// specification's JSON Schema (the largest JSON Schema at hand): every one must pass the
// limits, with room.
var realSchemas = []string{
	"../testdata/events/schema-registry/*/*.avsc",
	"../testdata/events/schema-registry/*/*.proto",
	"../bench/kafkapeer/*.avsc",
	"../bench/kafkapeer/orderpb/*.proto",
	"internal/testpb/*.proto",
	"../cmd/klt/internal/samlint/schema/sam.schema.json",
}

func TestRealSchemasWithinLimits(t *testing.T) {
	n := 0
	for _, glob := range realSchemas {
		paths, err := filepath.Glob(glob)
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: no schema (%v)", glob, err)
		}
		for _, path := range paths {
			n++
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var m measure
			switch filepath.Ext(path) {
			case ".avsc":
				sch, err := parseAvro(string(text))
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				m = measureAvro(sch)
			case ".json":
				if m, err = measureJSONSchema(string(text)); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			case ".proto":
				m = protoTextDepth(string(text))
				dir, file := filepath.Split(path)
				comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}})}
				files, err := comp.Compile(context.Background(), file)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				ms := files[0].Messages()
				for i := range ms.Len() {
					pm := measureProto(ms.Get(i))
					pm.depth = max(pm.depth, m.depth)
					m = maxMeasure(m, pm)
				}
			}
			t.Logf("%s: size %d, depth %d, alternatives %d", path, m.size, m.depth, m.alts)
			// Real schemas pass with room: a tenth of each limit.
			if m.size > schemaMaxSize/10 || m.depth > schemaMaxDepth/10 || m.alts > schemaMaxAlternatives/10 {
				t.Errorf("%s measures %+v: within a tenth of a limit (size %d, depth %d, alternatives %d)", path, m, schemaMaxSize, schemaMaxDepth, schemaMaxAlternatives)
			}
		}
	}
	t.Logf("%d schemas", n)
}

func maxMeasure(a, b measure) measure {
	return measure{size: max(a.size, b.size), depth: max(a.depth, b.depth), alts: max(a.alts, b.alts)}
}

// expandingAvro is the schema of issue 27: Root {x: long, f0: T1, f1: T1}, each Ti {a: Ti+1,
// b: Ti+1} (the second field names the type, so the text grows linearly), the last
// {n: null}. It expands to 2^(levels+1) fields.
func expandingAvro(levels int) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"Root","fields":[{"name":"x","type":"long"},{"name":"f0","type":`)
	var rec func(i int)
	rec = func(i int) {
		if i > levels {
			b.WriteString(`{"type":"record","name":"T` + strconv.Itoa(i) + `","fields":[{"name":"n","type":"null"}]}`)
			return
		}
		b.WriteString(`{"type":"record","name":"T` + strconv.Itoa(i) + `","fields":[{"name":"a","type":`)
		rec(i + 1)
		b.WriteString(`},{"name":"b","type":"T` + strconv.Itoa(i+1) + `"}]}`)
	}
	rec(1)
	b.WriteString(`},{"name":"f1","type":"T1"}]}`)
	return b.String()
}

// expandingJSONSchema is the JSON Schema of issue 27: D_i = anyOf[{$ref D_i+1}, {$ref D_i+1}],
// the last {"type":"string"}.
func expandingJSONSchema(levels int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/definitions/D0","definitions":{`)
	for i := range levels {
		fmt.Fprintf(&b, `"D%d":{"anyOf":[{"$ref":"#/definitions/D%d"},{"$ref":"#/definitions/D%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"D%d":{"type":"string"}}}`, levels)
	return b.String()
}

// expandingProto is a .proto file whose message M0 holds two M1, each Mi two Mi+1.
func expandingProto(levels int) string {
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\npackage x;\n")
	for i := range levels {
		fmt.Fprintf(&b, "message M%d { M%d a = 1; M%d b = 2; }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "message M%d { string s = 1; }\n", levels)
	return b.String()
}

// countBuilds counts the Avro schemas prepared while the test runs; when gate is not nil, each
// preparation waits for it to close, and entered gets a value as each begins.
func countBuilds(t *testing.T, gate chan struct{}, entered chan<- string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	h := func(id string) {
		n.Add(1)
		if entered != nil {
			entered <- id
		}
		if gate != nil {
			<-gate
		}
	}
	avroBuildHook.Store(&h)
	t.Cleanup(func() { avroBuildHook.Store(nil) })
	return &n
}

type onlyX struct {
	X int64 `avro:"x"`
}

// TestAvroExpandingSchemaBounded is issue 27's first attack: the schema above, 24 and 26
// levels, a 1-byte payload, decoded into a struct with only x under a 1 s deadline. On main
// the decoder was built eagerly, whatever the context: 39 s at 24 levels, over 60 s at 26, and
// every record paid again. Now the schema is measured first: a *SchemaLimitError before the
// deadline, and the next record of the schema gets it from the cache, without a second build.
func TestAvroExpandingSchemaBounded(t *testing.T) {
	for _, levels := range []int{24, 26} {
		t.Run(strconv.Itoa(levels), func(t *testing.T) {
			builds := countBuilds(t, nil, nil)
			c, err := Avro[onlyX]()
			if err != nil {
				t.Fatal(err)
			}
			s := &Schema{ID: "7", Format: FormatAvro, Text: expandingAvro(levels)}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			_, err = c.Decode(ctx, []byte{0}, s)
			first := time.Since(start)
			var le *SchemaLimitError
			if !errors.As(err, &le) {
				t.Fatalf("Decode: %v, want a *SchemaLimitError", err)
			}
			if le.Limit != limitSize || le.Max != schemaMaxSize || le.Measured < 1<<(levels+1) || le.ID != "7" || le.Format != FormatAvro {
				t.Errorf("SchemaLimitError %+v: want the expanded size, at least 2^%d, of schema 7", le, levels+1)
			}
			if ctx.Err() != nil {
				t.Errorf("Decode returned after the 1 s deadline (%v)", first)
			}
			start = time.Now()
			_, err2 := c.Decode(ctx, []byte{0}, s)
			next := time.Since(start)
			if !errors.As(err2, &le) {
				t.Fatalf("the next record: %v, want the *SchemaLimitError again", err2)
			}
			if n := builds.Load(); n != 1 {
				t.Errorf("schema prepared %d times for two records, want once", n)
			}
			t.Logf("%d levels (%d-byte schema): error after %v, next record %v: %v", levels, len(s.Text), first, next, err)
		})
	}
}

// TestAvroBuildAbandonedAndShared: a decoder that takes long to build (held by the test hook)
// is waited for only until the record's context ends, and the records of the same schema
// that come meanwhile wait for the same build, never start a second one.
func TestAvroBuildAbandonedAndShared(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan string, 1)
	builds := countBuilds(t, gate, entered)
	c, err := Avro[onlyX]()
	if err != nil {
		t.Fatal(err)
	}
	s := &Schema{ID: "3", Format: FormatAvro, Text: `{"type":"record","name":"R","fields":[{"name":"x","type":"long"}]}`}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	if _, err := c.Decode(ctx, []byte{2}, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decode while the build is held, its context cancelled: %v, want context.Canceled", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	got := make([]onlyX, 4)
	for i := range errs {
		wg.Go(func() { got[i], errs[i] = c.Decode(context.Background(), []byte{2}, s) })
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil || got[i].X != 1 {
			t.Errorf("record %d: %+v, %v, want x 1", i, got[i], err)
		}
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("schema prepared %d times, want once", n)
	}
}

func TestJSONSchemaMeasure(t *testing.T) {
	var le *SchemaLimitError
	for _, levels := range []int{20, 22} {
		err := CheckSchema(&Schema{ID: "9", Format: FormatJSON, Text: expandingJSONSchema(levels)})
		if !errors.As(err, &le) || le.Limit != limitSize || le.Measured < 1<<levels {
			t.Errorf("%d levels: %v, want the expanded size over its limit", levels, err)
		}
	}
	for _, c := range []struct{ name, text, err string }{
		{"small", expandingJSONSchema(10), ""},
		{"recursive", `{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, ""},
		{"root", `{"properties":{"a":{"$ref":"#"}}}`, ""},
		{"anchor", `{"$defs":{"a":{"$anchor":"x","type":"string"}},"$ref":"#x"}`, ""},
		{"draft7 anchor", `{"definitions":{"a":{"$id":"#x","type":"string"}},"$ref":"#x"}`, ""},
		{"embedded id", `{"$id":"http://e.x/a.json","$defs":{"b":{"$id":"b.json","type":"string"}},"$ref":"b.json"}`, ""},
		{"draft 7 $ref beside $id", `{"definitions":{"a":{"type":"string"}},"properties":{"p":{"$id":"http://o.x/p","$ref":"#/definitions/a"}}}`, ""},
		{"escaped pointer", `{"$defs":{"a/b":{"type":"string"},"c~d":{}},"allOf":[{"$ref":"#/$defs/a~1b"},{"$ref":"#/$defs/c~0d"}]}`, ""},
		{"meta-schema", `{"$ref":"http://json-schema.org/draft-07/schema#"}`, ""},
		{"elsewhere", `{"$ref":"http://e.x/other.json"}`, "names nothing in the document"},
		{"no such pointer", `{"$ref":"#/$defs/none"}`, "no \"/$defs/none\""},
		{"not JSON", `{"$ref":`, "does not parse"},
		{"two documents", `{} {}`, "data after the document"},
	} {
		err := CheckSchema(&Schema{ID: "1", Format: FormatJSON, Text: c.text})
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
	deep := strings.Repeat(`{"not":`, 300) + "{}" + strings.Repeat("}", 300)
	if err := CheckSchema(&Schema{Format: FormatJSON, Text: deep}); !errors.As(err, &le) || le.Limit != limitDepth {
		t.Errorf("300 levels of not: %v, want the depth over its limit", err)
	}
	var alts strings.Builder
	alts.WriteString(`{"oneOf":[`)
	for i := range schemaMaxAlternatives + 1 {
		if i > 0 {
			alts.WriteByte(',')
		}
		fmt.Fprintf(&alts, `{"const":%d}`, i)
	}
	alts.WriteString("]}")
	if err := CheckSchema(&Schema{Format: FormatJSON, Text: alts.String()}); !errors.As(err, &le) || le.Limit != limitAlternatives {
		t.Errorf("%d alternatives: %v, want the alternatives over their limit", schemaMaxAlternatives+1, err)
	}
}

func TestAvroSchemaMeasure(t *testing.T) {
	var le *SchemaLimitError
	if _, err := Avro[onlyX](AvroSchema(expandingAvro(24))); !errors.As(err, &le) || !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("AvroSchema of 24 levels: %v, want an invalid option wrapping a *SchemaLimitError", err)
	}
	if err := CheckSchema(&Schema{Format: FormatAvro, Text: expandingAvro(12)}); err != nil {
		t.Errorf("12 levels (2^13 fields): %v", err)
	}
	recursive := `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]},{"name":"other","type":["null","L"]}]}`
	if err := CheckSchema(&Schema{Format: FormatAvro, Text: recursive}); err != nil {
		t.Errorf("a recursive schema: %v", err)
	}
	deep := strings.Repeat(`{"type":"array","items":`, 300) + `"int"` + strings.Repeat("}", 300)
	if err := CheckSchema(&Schema{Format: FormatAvro, Text: deep}); !errors.As(err, &le) || le.Limit != limitDepth {
		t.Errorf("300 nested arrays: %v, want the depth over its limit", err)
	}
}

func TestProtobufSchemaMeasure(t *testing.T) {
	var le *SchemaLimitError
	deep := "syntax = \"proto3\";\n" + strings.Repeat("message M { ", 300) + strings.Repeat("}", 300)
	if err := CheckSchema(&Schema{Format: FormatProtobuf, Text: deep}); !errors.As(err, &le) || le.Limit != limitDepth {
		t.Errorf("300 nested messages: %v, want the depth over its limit", err)
	}
	if err := CheckSchema(&Schema{Format: FormatProtobuf, Text: "// {{{{\n/* {{{ */ message M { string s = 1 [json_name = \"{{{\"]; }"}); err != nil {
		t.Errorf("braces in comments and strings: %v", err)
	}
	for _, c := range []struct {
		levels int
		over   bool
	}{{10, false}, {20, true}} {
		comp := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{"x.proto": expandingProto(c.levels)}),
		}}
		files, err := comp.Compile(context.Background(), "x.proto")
		if err != nil {
			t.Fatal(err)
		}
		pc := ProtobufDynamic(files[0].Messages().ByName("M0"))
		_, err = pc.Decode(context.Background(), nil, nil)
		if got := errors.As(err, &le); got != c.over {
			t.Errorf("%d levels: Decode: %v, want a *SchemaLimitError: %v", c.levels, err, c.over)
		}
	}
}
