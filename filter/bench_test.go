package filter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// kafkaPatterns are benchPatterns as an event source mapping for Kafka has them: under value.
var kafkaPatterns = func() []string {
	ps := make([]string, len(benchPatterns))
	for i, p := range benchPatterns {
		ps[i] = `{"value":` + p + `}`
	}
	return ps
}()

// benchRecords are benchDocs as the values of Kafka records, 250 per partition of a topic.
var benchRecords = sync.OnceValue(func() []*kafkaevent.Record {
	bld := kafkaeventtest.NewBuilder()
	for i, d := range benchDocs() {
		bld.Add("orders", int32(i%4), d, kafkaeventtest.WithKey(fmt.Appendf(nil, "k-%d", i)))
	}
	var rs []*kafkaevent.Record
	for r := range bld.Event().All() {
		rs = append(rs, r)
	}
	return rs
})

// decodeAll decodes JSON texts with decodeJSON, failing tb on an error.
func decodeAll(tb testing.TB, texts []string) []any {
	tb.Helper()
	out := make([]any, len(texts))
	for i, s := range texts {
		v, err := decodeJSON([]byte(s))
		if err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
		out[i] = v
	}
	return out
}

// refWhich is the alternative to Criteria.Which: decode the document into a map once, then
// walk it with refMatch for each pattern.
func refWhich(pats []any, doc []byte, dst []int) ([]int, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return dst, err
	}
	for i, p := range pats {
		if refMatch(p, m) {
			dst = append(dst, i)
		}
	}
	return dst, nil
}

// refMatchKafka is the alternative to Criteria.MatchKafka for records whose value is a JSON
// object: decode the value into a map, put it under "value", and try each pattern.
func refMatchKafka(pats []any, r *kafkaevent.Record) bool {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(r.Value))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return false
	}
	rec := map[string]any{"value": m}
	for _, p := range pats {
		if refMatch(p, rec) {
			return true
		}
	}
	return false
}

// checkWhich compares Criteria.Which with refWhich on every benchmark document.
func checkWhich(tb testing.TB, c *filter.Criteria, pats []any) {
	tb.Helper()
	var got, want []int
	bad := 0
	for i, d := range benchDocs() {
		var err error
		got, err = c.Which(d, got[:0])
		if err != nil {
			tb.Fatalf("doc %d: Which: %v\n%s", i, err, d)
		}
		want, err = refWhich(pats, d, want[:0])
		if err != nil {
			tb.Fatalf("doc %d: refWhich: %v", i, err)
		}
		if !slices.Equal(got, want) {
			tb.Errorf("doc %d: Which = %v, refMatch says %v\n%s", i, got, want, d)
			if bad++; bad == 10 {
				tb.FailNow()
			}
		}
	}
}

func checkMatchKafka(tb testing.TB, c *filter.Criteria, pats []any) {
	tb.Helper()
	bad := 0
	for i, r := range benchRecords() {
		got, err := c.MatchKafka(r)
		if err != nil {
			tb.Fatalf("record %d: MatchKafka: %v", i, err)
		}
		if want := refMatchKafka(pats, r); got != want {
			tb.Errorf("record %d: MatchKafka = %v, refMatch says %v\n%s", i, got, want, r.Value)
			if bad++; bad == 10 {
				tb.FailNow()
			}
		}
	}
}

// TestBenchAgreement checks that both sides of BenchmarkMatch and BenchmarkMatchKafka find
// the same matches on every benchmark document.
func TestBenchAgreement(t *testing.T) {
	c, err := filter.NewCriteria(benchPatterns)
	if err != nil {
		t.Fatal(err)
	}
	checkWhich(t, c, decodeAll(t, benchPatterns))
	kc, err := filter.NewCriteria(kafkaPatterns)
	if err != nil {
		t.Fatal(err)
	}
	checkMatchKafka(t, kc, decodeAll(t, kafkaPatterns))
}

// TestWhichConcurrent checks that one Criteria serves many goroutines at once (run it with
// -race): each finds what a single goroutine finds.
func TestWhichConcurrent(t *testing.T) {
	c, err := filter.NewCriteria(benchPatterns)
	if err != nil {
		t.Fatal(err)
	}
	docs := benchDocs()
	want := make([][]int, len(docs))
	for i, d := range docs {
		if want[i], err = c.Which(d, nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var dst []int
			for k := range docs {
				i := (k*7 + g*131) % len(docs)
				var err error
				dst, err = c.Which(docs[i], dst[:0])
				if err != nil || !slices.Equal(dst, want[i]) {
					t.Errorf("goroutine %d, doc %d: Which = %v, %v; want %v", g, i, dst, err, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestBenchDocsFractions checks that each benchmark pattern matches a realistic fraction of
// the documents, neither none nor all, according to refMatch; and that the documents are
// about 200 bytes.
func TestBenchDocsFractions(t *testing.T) {
	pats := decodeAll(t, benchPatterns)
	counts := make([]int, len(pats))
	size := 0
	var dst []int
	for _, d := range benchDocs() {
		size += len(d)
		var err error
		dst, err = refWhich(pats, d, dst[:0])
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range dst {
			counts[i]++
		}
	}
	if avg := size / benchDocCount; avg < 150 || avg > 250 {
		t.Errorf("average document size %d bytes, want about 200", avg)
	}
	for i, n := range counts {
		t.Logf("%s matches %d of %d", benchPatterns[i], n, benchDocCount)
		if n < 10 || n > benchDocCount*9/10 {
			t.Errorf("%s matches %d of %d documents", benchPatterns[i], n, benchDocCount)
		}
	}
}

// reportEvents reports throughput for a benchmark whose every iteration handles one event;
// ns/op is then the time per event.
func reportEvents(b *testing.B, events int) {
	if s := b.Elapsed().Seconds(); s > 0 && events > 0 {
		b.ReportMetric(float64(events)/s, "events/s")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	}
}

// BenchmarkMatch compares, on 1000 generated orders of about 200 bytes and the five
// benchPatterns, two ways of finding which patterns an event matches. One iteration is one
// event, so ns/op and allocs/op are per event.
//
//   - impl=toolkit: one filter.Criteria of the five patterns; Which evaluates all five in one
//     pass over the document;
//   - impl=encoding-json-map: the obvious alternative, json.Unmarshal (UseNumber) into a
//     map[string]any once per event, then refMatch for each pattern.
//
// Quamina (github.com/timbray/quamina), the fastest EventBridge-pattern matcher in Go, is not
// served by the module proxy the project builds with, so it is not a dependency:
// scripts/bench-quamina QUAMINA_DIR measures it beside impl=toolkit on these patterns and
// documents, in one binary (filter/quaminabench).
//
// Run: scripts/bench -bench Match ./filter/ (or go test -run '^$' -bench Match -benchmem ./filter/)
func BenchmarkMatch(b *testing.B) {
	docs := benchDocs()
	c, err := filter.NewCriteria(benchPatterns)
	if err != nil {
		b.Fatal(err)
	}
	pats := decodeAll(b, benchPatterns)
	checkWhich(b, c, pats)

	b.Run("impl=toolkit", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]int, 0, len(benchPatterns))
		n, matched := 0, 0
		for b.Loop() {
			var err error
			dst, err = c.Which(docs[n%len(docs)], dst[:0])
			if err != nil {
				b.Fatal(err)
			}
			matched += len(dst)
			n++
		}
		reportEvents(b, n)
		if matched == 0 {
			b.Fatal("nothing matched")
		}
	})
	b.Run("impl=encoding-json-map", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]int, 0, len(benchPatterns))
		n, matched := 0, 0
		for b.Loop() {
			var err error
			dst, err = refWhich(pats, docs[n%len(docs)], dst[:0])
			if err != nil {
				b.Fatal(err)
			}
			matched += len(dst)
			n++
		}
		reportEvents(b, n)
		if matched == 0 {
			b.Fatal("nothing matched")
		}
	})
}

// BenchmarkMatchKafka compares, on the same documents as the values of 1000 Kafka records
// (built with kafkaeventtest.NewBuilder) and the five patterns under "value", two ways of
// deciding whether the event source mapping passes a record to the function. One iteration
// is one record. Both start from a *kafkaevent.Record, whose value Parse has already decoded
// from base64 (that cost is BenchmarkParse's, in kafkaevent).
//
//   - impl=toolkit: Criteria.MatchKafka;
//   - impl=encoding-json-map: json.Unmarshal of the value into a map, put under "value",
//     then refMatch for each pattern until one matches.
func BenchmarkMatchKafka(b *testing.B) {
	recs := benchRecords()
	c, err := filter.NewCriteria(kafkaPatterns)
	if err != nil {
		b.Fatal(err)
	}
	pats := decodeAll(b, kafkaPatterns)
	checkMatchKafka(b, c, pats)

	b.Run("impl=toolkit", func(b *testing.B) {
		b.ReportAllocs()
		n, matched := 0, 0
		for b.Loop() {
			if ok, err := c.MatchKafka(recs[n%len(recs)]); err != nil {
				b.Fatal(err)
			} else if ok {
				matched++
			}
			n++
		}
		reportEvents(b, n)
		if matched == 0 {
			b.Fatal("nothing matched")
		}
	})
	b.Run("impl=encoding-json-map", func(b *testing.B) {
		b.ReportAllocs()
		n, matched := 0, 0
		for b.Loop() {
			if refMatchKafka(pats, recs[n%len(recs)]) {
				matched++
			}
			n++
		}
		reportEvents(b, n)
		if matched == 0 {
			b.Fatal("nothing matched")
		}
	})
}

// BenchmarkCompile compares preparing the five benchPatterns: impl=toolkit compiles them
// into a Criteria; impl=encoding-json-map decodes each into a map[string]any (UseNumber),
// which is all refMatch needs. One iteration prepares all five.
func BenchmarkCompile(b *testing.B) {
	b.Run("impl=toolkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := filter.NewCriteria(benchPatterns); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=encoding-json-map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range benchPatterns {
				var m map[string]any
				d := json.NewDecoder(bytes.NewReader([]byte(p)))
				d.UseNumber()
				if err := d.Decode(&m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
