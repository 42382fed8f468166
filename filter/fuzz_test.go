package filter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// slowInput is the most one call may take on one fuzz input. Real patterns compile in
// microseconds; the bound is generous so that a loaded machine running fuzz workers in
// parallel does not fail it, and still far below what unbounded work on a hostile input
// (exponential $or expansion, quadratic array matching) would take.
// (race_test.go stretches it under the race detector.)
var slowInput = 500 * time.Millisecond

// hangInput is when a fuzz input counts as hung. The fuzzer has no timeout of its own for
// one input: a worker stuck on one just stops, and the run ends with PASS. The watchdog
// panics instead, which crashes the worker, so that the fuzzer saves the input and reports it.
const hangInput = 10 * time.Second

func watchdog(inputs ...any) *time.Timer {
	return time.AfterFunc(hangInput, func() {
		var parts []string
		for _, in := range inputs {
			parts = append(parts, abbrev(in))
		}
		panic(fmt.Sprintf("fuzz input still running after %v: %s", hangInput, strings.Join(parts, ", ")))
	})
}

// timed runs fn and fails t if it took longer than slowInput. A slow call is tried twice
// more, and counts only if every try is slow, so that a pause of the machine (a shared
// virtual machine, fuzz workers on every core) does not fail the input.
func timed(t *testing.T, what string, input any, fn func()) {
	t.Helper()
	best := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		fn()
		best = min(best, time.Since(start))
		if best <= slowInput {
			return
		}
	}
	t.Errorf("%s took %v (best of three) on %s", what, best, abbrev(input))
}

// work runs fn on a thread of its own and returns the CPU time that thread used: how much
// work fn did, which other processes on a loaded machine do not stretch (they take the
// cores' time, not this thread's), where the wall time they stretch without bound.
// Match and Compile run on the calling goroutine and start none.
func work(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	fn()
	return threadCPU() - start
}

// abbrev renders a fuzz input for a failure message, cut short when long.
func abbrev(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		s = fmt.Sprint(v)
	}
	if len(s) > 300 {
		return fmt.Sprintf("%q… (%d bytes)", s[:300], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// checkError fails t unless err is an *filter.Error with a reason and the expected filter
// index.
func checkError(t *testing.T, what string, err error, filterIndex int) {
	t.Helper()
	var e *filter.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error is %T, not *filter.Error: %v", what, err, err)
	}
	if e.Reason == "" {
		t.Fatalf("%s: error without a reason: %#v", what, e)
	}
	if e.Filter != filterIndex {
		t.Fatalf("%s: error for filter %d, want %d: %v", what, e.Filter, filterIndex, e)
	}
}

// FuzzCompile checks, on any pattern text: Compile never panics and takes bounded time (with
// every option); every error is an *filter.Error with a reason, for filter -1 from Compile
// and 0 from NewCriteria and ParseCriteria; NewCriteria and ParseCriteria accept exactly what
// Compile accepts; what the strict Lambda mode accepts, WithEventBridge accepts too; a
// compiled pattern keeps its text, and Criteria write back to FilterCriteria that parse to
// the same patterns. The seed corpus is testdata/fuzz/FuzzCompile.
func FuzzCompile(f *testing.F) {
	for _, p := range benchPatterns {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		defer watchdog(pattern).Stop()
		var p *filter.Pattern
		var err error
		timed(t, "Compile", pattern, func() { p, err = filter.Compile(pattern) })
		if err != nil {
			checkError(t, "Compile", err, -1)
		} else if p.String() != pattern {
			t.Fatalf("String() = %q, want %q", p.String(), pattern)
		}

		var ebErr error
		timed(t, "Compile WithEventBridge", pattern, func() { _, ebErr = filter.Compile(pattern, filter.WithEventBridge()) })
		if ebErr != nil {
			checkError(t, "Compile WithEventBridge", ebErr, -1)
			if err == nil {
				t.Fatalf("the Lambda mode accepts %q but WithEventBridge rejects it: %v", pattern, ebErr)
			}
		}
		var legacyErr error
		timed(t, "Compile WithLegacyNumbers", pattern, func() { _, legacyErr = filter.Compile(pattern, filter.WithLegacyNumbers()) })
		if legacyErr != nil {
			checkError(t, "Compile WithLegacyNumbers", legacyErr, -1)
		}

		var c *filter.Criteria
		var cErr error
		timed(t, "NewCriteria", pattern, func() { c, cErr = filter.NewCriteria([]string{pattern}) })
		if (cErr == nil) != (err == nil) {
			t.Fatalf("Compile error %v but NewCriteria error %v", err, cErr)
		}
		if cErr != nil {
			checkError(t, "NewCriteria", cErr, 0)
		}

		fc, mErr := json.Marshal(map[string]any{"Filters": []any{map[string]string{"Pattern": pattern}}})
		if mErr != nil {
			t.Fatal(mErr)
		}
		var pc *filter.Criteria
		var pErr error
		timed(t, "ParseCriteria", pattern, func() { pc, pErr = filter.ParseCriteria(fc) })
		if utf8.ValidString(pattern) && (pErr == nil) != (err == nil) {
			// (json.Marshal replaces invalid UTF-8, so the pattern ParseCriteria sees may
			// differ from the one Compile saw.)
			t.Fatalf("Compile error %v but ParseCriteria error %v", err, pErr)
		}
		if pErr != nil {
			checkError(t, "ParseCriteria", pErr, 0)
		}
		if cErr != nil {
			return
		}
		if got := c.Filters(); len(got) != 1 || got[0].String() != pattern {
			t.Fatalf("NewCriteria Filters() = %v", got)
		}
		if pc != nil {
			if got := pc.Filters(); len(got) != 1 {
				t.Fatalf("ParseCriteria Filters() = %v", got)
			}
		}
		out, mErr := c.MarshalJSON()
		if mErr != nil {
			t.Fatalf("MarshalJSON: %v", mErr)
		}
		again, aErr := filter.ParseCriteria(out)
		if aErr != nil {
			t.Fatalf("ParseCriteria(MarshalJSON()) = %v\n%s", aErr, out)
		}
		// (A pattern that is not valid UTF-8 compiles as if each bad byte were U+FFFD, as
		// encoding/json reads it, and is written back so.)
		if got := again.Filters(); len(got) != 1 || (utf8.ValidString(pattern) && got[0].String() != pattern) {
			t.Fatalf("ParseCriteria(MarshalJSON()) patterns = %v, want [%q]\n%s", got, pattern, out)
		}
	})
}

// FuzzMatch checks, on any pattern and document: Match never panics and takes bounded time;
// it returns an error exactly when the document is not valid JSON (or is too complex,
// filter.ErrTooComplex); Criteria.Match and Criteria.Which agree with Pattern.Match; and,
// when the document is a JSON object and the pattern uses only what refMatch implements,
// Pattern.Match agrees with refMatch (differential). The seed corpus is
// testdata/fuzz/FuzzMatch.
func FuzzMatch(f *testing.F) {
	for i, p := range benchPatterns {
		f.Add(p, benchDocs()[i])
	}
	// At the limits: nesting as deep as Lambda's filtering engine reads, one level deeper, and
	// as deep as the readers go; a large document.
	nest := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n-1) + `"x"` + strings.Repeat("]", n-1) + `}`)
	}
	f.Add(`{"a":["x"]}`, nest(1000))
	f.Add(`{"a":["x"]}`, nest(1001))
	f.Add(`{"a":["x"]}`, nest(10000))
	f.Add(benchPatterns[0], []byte(`{"items":[`+strings.Repeat(`{"sku":"A","qty":1},`, 20000)+`{}]}`))
	f.Fuzz(func(t *testing.T, pattern string, doc []byte) {
		defer watchdog(pattern, doc).Stop()
		p, err := filter.Compile(pattern)
		if err != nil {
			return
		}
		var got bool
		timed(t, "Match", doc, func() { got, err = p.Match(doc) })
		// The fast path answers as the general path does, errors included.
		if gGot, gErr := p.GeneralMatch(doc); gGot != got || errText(gErr) != errText(err) {
			t.Fatalf("Match(%s) on %s = %v, %v; the general path says %v, %v", pattern, abbrev(doc), got, err, gGot, gErr)
		}
		valid := json.Valid(doc)
		switch {
		case errors.Is(err, filter.ErrTooComplex):
			t.Logf("too complex: %v", err)
			return
		case err != nil && valid:
			t.Fatalf("Match(%s) on valid JSON %s: %v", pattern, abbrev(doc), err)
		case err == nil && !valid:
			t.Fatalf("Match(%s) on invalid JSON %s = %v, no error", pattern, abbrev(doc), got)
		case err != nil:
			return
		}

		c, err := filter.NewCriteria([]string{pattern})
		if err != nil {
			t.Fatalf("NewCriteria: %v", err)
		}
		cGot, err := c.Match(doc)
		if err != nil || cGot != got {
			t.Fatalf("Criteria.Match = %v, %v; Pattern.Match = %v", cGot, err, got)
		}
		which, err := c.Which(doc, []int{7})
		want := []int{7}
		if got {
			want = append(want, 0)
		}
		if err != nil || !slices.Equal(which, want) {
			t.Fatalf("Criteria.Which = %v, %v; want %v", which, err, want)
		}

		// Differential against refMatch.
		if !patternComparable(pattern) || !refComparable(doc) {
			return
		}
		pv, err := decodeJSON([]byte(pattern))
		if err != nil || !refSupported(pv) {
			return
		}
		dv, err := decodeJSON(doc)
		if err != nil {
			return
		}
		if _, ok := dv.(map[string]any); !ok {
			return
		}
		if want := refMatch(pv, dv); got != want {
			t.Fatalf("Match = %v, refMatch = %v\npattern: %s\ndoc:     %s", got, want, pattern, doc)
		}
	})
}

// patternComparable is refComparable for pattern texts, which may repeat a field name: the
// last one wins, in the engine as in encoding/json (§2.1).
func patternComparable(pattern string) bool {
	return utf8.ValidString(pattern) && !hasSurrogateEscape([]byte(pattern))
}

// TestCompileBounded runs Compile on inputs built to make naive code slow: deep nesting,
// $or explosions, wide objects, long lists, long strings.
func TestCompileBounded(t *testing.T) {
	rep := strings.Repeat
	orN := func(n int, field string) string {
		var b strings.Builder
		b.WriteString(`{"$or":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"%s%d":["x"]}`, field, i)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	nestedOr := func(depth int) string {
		s := `{"z":["x"]}`
		for i := range depth {
			s = fmt.Sprintf(`{"$or":[%s,{"a%d":["y"]}],"$or":[{"b%d":["1"]},{"c%d":["2"]}]}`, s, i, i, i)
		}
		return s
	}
	parallelOr := func(fields, branches int) string {
		var b strings.Builder
		b.WriteByte('{')
		for f := range fields {
			if f > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"f%d":%s`, f, orN(branches, "g"))
		}
		b.WriteByte('}')
		return b.String()
	}
	wide := func(n int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"f%d":[%d]`, i, i)
		}
		b.WriteByte('}')
		return b.String()
	}
	inputs := map[string]string{
		"deep objects (within 4096)":   rep(`{"a":`, 680) + `["x"]` + rep(`}`, 680),
		"deep objects (over 4096)":     rep(`{"a":`, 100000) + `["x"]` + rep(`}`, 100000),
		"deep arrays":                  `{"a":` + rep(`[`, 2040) + rep(`]`, 2040) + `}`,
		"deep arrays (over 4096)":      `{"a":` + rep(`[`, 1000000) + rep(`]`, 1000000) + `}`,
		"deep unclosed":                rep(`{"a":`, 819),
		"$or 250 branches":             orN(250, "f"),
		"$or nested 2^10":              nestedOr(5),
		"$or nested deep":              nestedOr(40),
		"$or parallel 10^3":            parallelOr(3, 10),
		"$or parallel 8^4":             parallelOr(4, 8),
		"$or parallel 2^40":            parallelOr(40, 2),
		"$or deep chain":               rep(`{"$or":[{"a":["x"]},`, 150) + `{"b":["y"]}` + rep(`]}`, 150),
		"wide object":                  wide(330),
		"long value list":              `{"a":[` + strings.TrimSuffix(rep(`"x",`, 1000), ",") + `]}`,
		"long string":                  `{"a":["` + rep("x", 4080) + `"]}`,
		"huge string (over 4096)":      `{"a":["` + rep("x", 10<<20) + `"]}`,
		"long numeric list":            `{"a":[` + strings.TrimSuffix(rep(`{"numeric":[">",1,"<",2]},`, 150), ",") + `]}`,
		"long anything-but":            `{"a":[{"anything-but":[` + strings.TrimSuffix(rep(`"x",`, 1000), ",") + `]}]}`,
		"many escapes":                 `{"a":["` + rep(`\u00e9`, 680) + `"]}`,
		"wildcard stars (EventBridge)": `{"a":[{"wildcard":"` + rep("*a", 2000) + `"}]}`,
	}
	for name, in := range inputs {
		for _, opts := range [][]filter.Option{nil, {filter.WithEventBridge()}, {filter.WithLegacyNumbers()}} {
			var err error
			start := time.Now()
			timed(t, name+": Compile", in, func() { _, err = filter.Compile(in, opts...) })
			if err != nil {
				checkError(t, name, err, -1)
			}
			t.Logf("%s (%d bytes, %d options): %v in %v", name, len(in), len(opts), err, time.Since(start).Round(time.Microsecond))
		}
	}
}

// TestMatchBounded runs Match on documents built to make naive code slow: deep nesting, many
// array elements under the paths of an array-consistent pattern, nested arrays.
func TestMatchBounded(t *testing.T) {
	rep := strings.Repeat
	elems := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	fields4 := `{"a":{"b":["x"],"c":["x"],"d":["x"],"e":["x"]}}`
	// alternating is n items, half of them with the SKU and the other half with the quantity
	// {"items":{"sku":["SKU-0042"],"qty":[5]}} asks for, none with both.
	alternating := func(n int) string {
		return elems(n, func(i int) string {
			if i%2 == 0 {
				return `{"sku":"SKU-0042","qty":1}`
			}
			return `{"sku":"SKU-0001","qty":5}`
		})
	}
	// Documents nested deeper than 1000 containers (Jackson's limit: see maxDocDepth) give
	// ErrTooComplex, valid JSON or not; up to it they are read.
	const tooComplex = "too complex"
	cases := []struct{ name, pattern, doc, want string }{
		{"deep objects", `{"a":{"a":{"a":["x"]}}}`, rep(`{"a":`, 100000) + `1` + rep(`}`, 100000), tooComplex},
		{"deep arrays", `{"a":["x"]}`, `{"a":` + rep(`[`, 100000) + `"x"` + rep(`]`, 100000) + `}`, tooComplex},
		{"deep arrays, unterminated", `{"a":["x"]}`, `{"a":` + rep(`[`, 100000), tooComplex},
		{"deep objects past the limit", `{"a":{"a":{"a":["x"]}}}`, rep(`{"a":`, 1001) + `"x"` + rep(`}`, 1001), tooComplex},
		{"deep empty arrays past the limit", `{"a":["x"]}`, `{"a":` + rep(`[`, 1000) + rep(`]`, 1000) + `}`, tooComplex},
		{"deep objects within limits", `{"a":{"a":{"a":["x"]}}}`, rep(`{"a":`, 1000) + `"x"` + rep(`}`, 1000), "false"},
		{"deep arrays within limits", `{"a":["x"]}`, `{"a":` + rep(`[`, 999) + `"x"` + rep(`]`, 999) + `}`, "true"},
		{"deep empty arrays within limits", `{"a":["x"]}`, `{"a":` + rep(`[`, 999) + rep(`]`, 999) + `}`, "false"},
		{"deep arrays on path", `{"a":{"b":{"b":["x"]}}}`, `{"a":` + rep(`[{"b":`, 499) + `"x"` + rep(`}]`, 499) + `}`, "false"},
		{"no consistent element", fields4, `{"a":` + elems(4000, func(i int) string {
			return fmt.Sprintf(`{"%c":"x"}`, 'b'+i%4)
		}) + `}`, "false"},
		{"no consistent element, last matches", fields4, `{"a":` + elems(4000, func(i int) string {
			if i == 3999 {
				return `{"b":"x","c":"x","d":"x","e":"x"}`
			}
			return fmt.Sprintf(`{"%c":"x"}`, 'b'+i%4)
		}) + `}`, "true"},
		{"leaf arrays in elements", fields4, `{"a":` + elems(200, func(i int) string {
			return `{"b":` + elems(20, func(int) string { return `"x"` }) + `,"c":["x","x"],"d":"x"}`
		}) + `}`, "false"},
		{"nested arrays", `{"a":{"b":{"c":["x"],"d":["y"]},"e":["z"]}}`, `{"a":` + elems(100, func(i int) string {
			return `{"b":` + elems(100, func(j int) string { return `{"c":"x"}` }) + `,"e":"z"}`
		}) + `}`, "false"},
		// Two fields under one array of objects, 15,000 elements (400 KB), each field matching
		// in half of them but never both in one: a naive search checks every leaf of one
		// field against every leaf of the other.
		{"quadratic consistency", `{"items":{"sku":["SKU-0042"],"qty":[5]}}`, `{"items":` + alternating(15000) + `}`, "false"},
		// The same one level down, under an outer array: two orders of a batch, the first
		// with 4,000 items (100 KB), the second with the item asked for.
		{"quadratic consistency, nested arrays", `{"orders":{"items":{"sku":["SKU-0042"],"qty":[5]}}}`,
			`{"orders":[{"items":` + alternating(4000) + `},{"items":[{"sku":"SKU-0042","qty":5}]}]}`, "true"},
		{"quadratic consistency, nested arrays, no match", `{"orders":{"items":{"sku":["SKU-0042"],"qty":[5]}}}`,
			`{"orders":[{"items":` + alternating(15000) + `}]}`, "false"},
		// 5,000 strings 999 arrays deep (22 KB): each leaf on the pattern's path
		// lies in every one of those arrays.
		{"deep arrays, many leaves", `{"a":["y"]}`, `{"a":` + rep(`[`, 999) + strings.TrimSuffix(rep(`"x",`, 5000), ",") + rep(`]`, 999) + `}`, "false"},
		{"wide document", `{"zz":["x"]}`, `{` + strings.Join(func() []string {
			var s []string
			for i := range 200000 {
				s = append(s, fmt.Sprintf(`"f%d":%d`, i, i))
			}
			return s
		}(), ",") + `}`, "false"},
		{"long string", `{"a":[{"suffix":"y"}]}`, `{"a":"` + rep("x", 10<<20) + `"}`, "false"},
		{"long escapes", `{"a":[{"equals-ignore-case":"y"}]}`, `{"a":"` + rep(`\u00e9`, 1<<20) + `"}`, "false"},
	}
	for _, tc := range cases {
		p, err := filter.Compile(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got bool
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		took := work(func() { got, err = p.Match([]byte(tc.doc)) })
		runtime.ReadMemStats(&after)
		if took > slowInput {
			t.Errorf("%s: Match took %v of CPU on %s", tc.name, took, abbrev(tc.doc))
		}
		// Matching keeps the values on the pattern's paths, unescaped: it may need memory
		// in proportion to the document, not more.
		if mem, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*len(tc.doc)+16<<20); mem > limit {
			t.Errorf("%s: Match allocated %d MB on a document of %d KB", tc.name, mem>>20, len(tc.doc)>>10)
		}
		t.Logf("%s (%d bytes): %v, %v in %v of CPU", tc.name, len(tc.doc), got, err, took.Round(time.Microsecond))
		switch {
		case tc.want == tooComplex:
			if !errors.Is(err, filter.ErrTooComplex) || errors.Is(err, filter.ErrDocument) || got {
				t.Errorf("%s: Match = %v, %v; want false, ErrTooComplex", tc.name, got, err)
			}
		case err != nil || strconv.FormatBool(got) != tc.want:
			t.Errorf("%s: Match = %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

// TestMatchDifferentialRandom is the differential test with structure: random patterns and
// documents over a small vocabulary (three field names, values that differ only in type,
// case or number form, arrays of objects), so that most pairs compile, are within what
// refMatch implements, and land on the edges of the semantics. Pattern.Match must agree with
// refMatch on all of them; so must Criteria.Which, on the pattern and the few before it
// together, and Criteria.MatchKafka, with the pattern under "value".
func TestMatchDifferentialRandom(t *testing.T) {
	n := 25000
	if testing.Short() {
		n = 5000
	}
	rng := rand.New(rand.NewPCG(3, 4))
	g := diffGen{rng: rng}
	compared, matched, failures := 0, 0, 0
	var recent []string
	var recentPV []any
	for i := 0; i < n && failures < 10; i++ {
		pattern := g.pattern(0)
		doc := g.doc(0)
		p, err := filter.Compile(pattern)
		if err != nil {
			continue
		}
		pv, err := decodeJSON([]byte(pattern))
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		if !refSupported(pv) {
			continue
		}
		dv, err := decodeJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		got, err := p.Match([]byte(doc))
		if err != nil {
			t.Fatalf("Match(%s, %s): %v", pattern, doc, err)
		}
		compared++
		if got {
			matched++
		}
		if want := refMatch(pv, dv); got != want {
			failures++
			t.Errorf("Match = %v, refMatch = %v\npattern: %s\ndoc:     %s", got, want, pattern, doc)
		}

		// A Kafka event source mapping with the pattern under "value", on a record whose
		// value is the document, decides alike.
		kc, err := filter.NewCriteria([]string{`{"value":` + pattern + `}`})
		if err != nil {
			t.Fatalf("NewCriteria: %v", err)
		}
		kGot, kErr := kc.MatchKafka(&kafkaevent.Record{Topic: "t", Value: []byte(doc)})
		if kErr != nil && !errors.Is(kErr, filter.ErrTooComplex) {
			t.Errorf("MatchKafka: %v", kErr)
		}
		if gk, gkErr := kc.GeneralMatchKafka(&kafkaevent.Record{Topic: "t", Value: []byte(doc)}); gk != kGot || errText(gkErr) != errText(kErr) {
			failures++
			t.Errorf("MatchKafka = %v, %v; the general path says %v, %v\npattern: %s\nvalue:   %s", kGot, kErr, gk, gkErr, pattern, doc)
		}
		if kErr == nil && kGot != got {
			failures++
			t.Errorf("MatchKafka = %v, Match = %v\npattern: %s\nvalue:   %s", kGot, got, pattern, doc)
		}

		// Criteria of this pattern and the last few share one pass over the document (their
		// paths merged): Which must find what each pattern finds alone.
		recent = append(recent, pattern)
		recentPV = append(recentPV, pv)
		if len(recent) > 4 {
			recent, recentPV = recent[1:], recentPV[1:]
		}
		c, err := filter.NewCriteria(recent)
		if err != nil {
			t.Fatalf("NewCriteria(%q): %v", recent, err)
		}
		which, err := c.Which([]byte(doc), nil)
		if err != nil {
			t.Fatalf("Which: %v", err)
		}
		if gw, err := c.GeneralWhich([]byte(doc), nil); err != nil || !slices.Equal(gw, which) {
			failures++
			t.Errorf("Which = %v; the general path says %v, %v\npatterns: %q\ndoc:      %s", which, gw, err, recent, doc)
		}
		var want []int
		for k, v := range recentPV {
			if refMatch(v, dv) {
				want = append(want, k)
			}
		}
		if !slices.Equal(which, want) {
			failures++
			t.Errorf("Which = %v, refMatch says %v\npatterns: %q\ndoc:      %s", which, want, recent, doc)
		}
	}
	t.Logf("%d pairs compared, %d matched", compared, matched)
	if compared < n/4 || matched < compared/20 {
		t.Errorf("the generator is off: %d of %d pairs compared, %d matched", compared, n, matched)
	}
}

type diffGen struct{ rng *rand.Rand }

func (g diffGen) pick(options ...string) string { return options[g.rng.IntN(len(options))] }

var diffNames = []string{"a", "b", "c"}

func (g diffGen) names(k int) []string {
	perm := g.rng.Perm(len(diffNames))
	out := make([]string, k)
	for i := range out {
		out[i] = diffNames[perm[i]]
	}
	return out
}

func (g diffGen) scalar() string {
	return g.pick(`"x"`, `"y"`, `"X"`, `"xy"`, `""`, `"1"`, `"null"`, `1`, `1.0`, `10`, `1e1`, `-0`, `0`, `2.5`, `true`, `false`, `null`)
}

// docScalar is scalar as a document may spell it: strings with escapes, numbers in other
// forms.
func (g diffGen) docScalar() string {
	s := g.scalar()
	switch {
	case strings.HasPrefix(s, `"`):
		return g.str(s[1 : len(s)-1])
	case s == "1" && g.rng.IntN(2) == 0:
		return g.pick(`1E0`, `0.1e1`, `100e-2`, `1.000`)
	case s == "10" && g.rng.IntN(2) == 0:
		return g.pick(`1E+1`, `10.0`, `0.10e2`)
	}
	return s
}

// str writes s as a JSON string, escaping some characters at random.
func (g diffGen) str(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		if g.rng.IntN(4) == 0 {
			fmt.Fprintf(&b, `\u%04x`, c)
		} else {
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ws is optional white space between tokens.
func (g diffGen) ws() string {
	if g.rng.IntN(8) == 0 {
		return g.pick(" ", "\n", "\t ", "\r\n  ")
	}
	return ""
}

// doc returns a random JSON object.
func (g diffGen) doc(depth int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range g.names(g.rng.IntN(4)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s%s:%s%s", g.ws(), g.str(name), g.ws(), g.value(depth))
	}
	b.WriteString(g.ws() + "}")
	return b.String()
}

func (g diffGen) value(depth int) string {
	switch r := g.rng.IntN(10); {
	case r < 4 || depth >= 3:
		return g.docScalar()
	case r < 6:
		return g.doc(depth + 1)
	default:
		n := g.rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			if g.rng.IntN(2) == 0 {
				parts[i] = g.doc(depth + 1)
			} else {
				parts[i] = g.value(depth + 1)
			}
		}
		return "[" + g.ws() + strings.Join(parts, g.ws()+",") + "]"
	}
}

// pattern returns a random pattern object.
func (g diffGen) pattern(depth int) string {
	var parts []string
	for _, name := range g.names(1 + g.rng.IntN(2)) {
		var v string
		if depth < 2 && g.rng.IntN(10) < 3 {
			v = g.pattern(depth + 1)
		} else {
			v = g.valueList()
		}
		parts = append(parts, fmt.Sprintf("%q:%s", name, v))
	}
	if depth < 2 && g.rng.IntN(10) < 2 {
		branches := make([]string, 2+g.rng.IntN(2))
		for i := range branches {
			branches[i] = g.pattern(depth + 1)
		}
		parts = append(parts, `"$or":[`+strings.Join(branches, ",")+`]`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (g diffGen) valueList() string {
	n := 1 + g.rng.IntN(2)
	ms := make([]string, n)
	for i := range ms {
		if g.rng.IntN(3) == 0 {
			ms[i] = g.scalar()
			continue
		}
		ms[i] = g.pick(
			`{"prefix":"x"}`, `{"prefix":""}`, `{"suffix":"y"}`, `{"equals-ignore-case":"X"}`, `{"equals-ignore-case":"XY"}`,
			`{"anything-but":"x"}`, `{"anything-but":["x","y"]}`, `{"anything-but":[1]}`, `{"anything-but":10}`,
			`{"exists":true}`, `{"exists":false}`, `{"exists":false}`,
			`{"numeric":[">",0]}`, `{"numeric":["<=",1]}`, `{"numeric":[">=",1,"<",10]}`, `{"numeric":["=",1]}`, `{"numeric":["=",0]}`,
		)
	}
	return "[" + strings.Join(ms, ",") + "]"
}

// FuzzParseCriteria checks, on any bytes: ParseCriteria never panics and takes bounded time;
// it accepts only one JSON object whose only key is Filters, an array of one to five objects
// whose only key is Pattern, a string (encoding/json is the judge of the JSON); every error
// is an *filter.Error with a reason; and accepted criteria write back (MarshalJSON) to
// FilterCriteria that parse to the same patterns. The seed corpus is
// testdata/fuzz/FuzzParseCriteria.
func FuzzParseCriteria(f *testing.F) {
	f.Add([]byte(criteriaJSON(benchPatterns...)))
	f.Add([]byte(`{"Filters":[]}`))
	f.Add([]byte(`{"Filters":[{"Pattern":"{\"a\":[\"1\"]}"}]} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog(data).Stop()
		var c *filter.Criteria
		var err error
		timed(t, "ParseCriteria", data, func() { c, err = filter.ParseCriteria(data) })
		// What a strict reading accepts: exactly one object, exactly the known keys.
		var shape struct {
			Filters []map[string]json.RawMessage
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		strictOK := dec.Decode(&shape) == nil && func() bool { _, e := dec.Token(); return e == io.EOF }()
		if strictOK {
			var top map[string]json.RawMessage
			strictOK = json.Unmarshal(data, &top) == nil && len(top) == 1 && top["Filters"] != nil &&
				len(shape.Filters) >= 1 && len(shape.Filters) <= limits.FilterQuota
			for _, fo := range shape.Filters {
				var s string
				strictOK = strictOK && len(fo) == 1 && fo["Pattern"] != nil && json.Unmarshal(fo["Pattern"], &s) == nil &&
					string(fo["Pattern"]) != "null"
			}
		}
		if err != nil {
			var fe *filter.Error
			if !errors.As(err, &fe) || fe.Reason == "" {
				t.Fatalf("ParseCriteria(%s): error %T %v is not an *filter.Error with a reason", abbrev(data), err, err)
			}
			return
		}
		if !strictOK {
			t.Fatalf("ParseCriteria(%s) accepted FilterCriteria a strict reading refuses", abbrev(data))
		}
		out, err := c.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		again, err := filter.ParseCriteria(out)
		if err != nil {
			t.Fatalf("ParseCriteria(MarshalJSON()) = %v\n%s", err, out)
		}
		a, b := c.Filters(), again.Filters()
		if len(a) != len(b) {
			t.Fatalf("%d filters written back as %d\n%s", len(a), len(b), out)
		}
		for i := range a {
			if a[i].String() != b[i].String() && utf8.ValidString(a[i].String()) {
				t.Fatalf("filter %d: %q written back as %q", i, a[i], b[i])
			}
		}
	})
}
