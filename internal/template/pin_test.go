package template

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The templates of testdata/pin are copies of the repository's template.yaml and of klt's test
// templates (lint, invoke, filter) as they were when this package replaced klt's three readers.
// testdata/pin/expected.json is what those readers made of each: lint's JSON form of the
// template, filter lint's FilterCriteria, klt invoke's functions, tables, queues and evaluated
// environments. The tests below pin the model to those values.

// pinned is one template's entry of expected.json.
type pinned struct {
	Plain        any                        `json:"plain"`
	PlainErr     string                     `json:"plainErr"`
	CriteriaRefs []string                   `json:"criteriaRefs"`
	Hidden       int                        `json:"hidden"`
	Criteria     map[string]json.RawMessage `json:"criteria"`
	Invoke       *struct {
		Functions []string `json:"functions"`
		Tables    []struct {
			ID, Name, Stream string
			Keys             []string
		} `json:"tables"`
		Queues []struct{ ID, Name string } `json:"queues"`
		Specs  map[string]json.RawMessage  `json:"specs"`
	} `json:"invoke"`
}

// pinnedTemplates reads expected.json and every template it names.
func pinnedTemplates(t *testing.T) map[string]pinned {
	t.Helper()
	data, err := os.ReadFile("testdata/pin/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]pinned
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) < 20 {
		t.Fatalf("expected.json has %d templates", len(all))
	}
	return all
}

// pinPath is the copy of the template the old readers called name.
func pinPath(name string) string {
	return filepath.Join("testdata", "pin", strings.TrimPrefix(name, "testdata/"))
}

// viaJSON is v as encoding/json gives it back: numbers are float64 on both sides.
func viaJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPinnedPlain: Plain gives what lint's templateValue gave (the JSON form the SAM schema
// checks), and fails where it failed.
func TestPinnedPlain(t *testing.T) {
	for name, want := range pinnedTemplates(t) {
		tpl, err := ReadFile(pinPath(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, err := tpl.Root.Plain()
		if want.PlainErr != "" {
			if err == nil || !strings.Contains(err.Error(), strings.SplitN(want.PlainErr, ": ", 2)[1]) {
				t.Errorf("%s: Plain: %v, want an error like %q", name, err, want.PlainErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Plain: %v", name, err)
			continue
		}
		if g := viaJSON(t, got); !reflect.DeepEqual(g, want.Plain) {
			t.Errorf("%s: Plain differs from lint's old reading\n got %v\nwant %v", name, g, want.Plain)
		}
	}
}

// TestPinnedCriteria: the FilterCriteria filter lint found, and their patterns as JSON text.
func TestPinnedCriteria(t *testing.T) {
	for name, want := range pinnedTemplates(t) {
		tpl, err := ReadFile(pinPath(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var refs []string
		hidden := 0
		for _, r := range tpl.Resources {
			for _, src := range criteriaHolders(r) {
				switch {
				case src.props == nil:
				case isIntrinsic(src.props):
					hidden++
				case src.props.Get("FilterCriteria") != nil:
					refs = append(refs, src.ref)
					checkPatterns(t, name, src.ref, src.props.Get("FilterCriteria"), want.Criteria[src.ref])
				}
			}
		}
		if !slices.Equal(refs, want.CriteriaRefs) || hidden != want.Hidden {
			t.Errorf("%s: FilterCriteria at %v (%d hidden), want %v (%d)", name, refs, hidden, want.CriteriaRefs, want.Hidden)
		}
	}
}

func isIntrinsic(n *Node) bool { _, _, ok := n.Intrinsic(); return ok }

// criteriaHolder is a place FilterCriteria may be: an event's Properties, a mapping's.
type criteriaHolder struct {
	ref   string // "Function.Event" or "Mapping"
	props *Node
}

func criteriaHolders(r *Resource) []criteriaHolder {
	switch r.Type {
	case TypeEventSourceMapping:
		return []criteriaHolder{{r.LogicalID, r.Properties}}
	case TypeFunction:
		var out []criteriaHolder
		for _, e := range r.Events {
			out = append(out, criteriaHolder{r.LogicalID + "." + e.Name, e.Properties})
		}
		return out
	}
	return nil
}

// checkPatterns compares the patterns of fc with those filter lint read.
func checkPatterns(t *testing.T, name, ref string, fc *Node, raw json.RawMessage) {
	t.Helper()
	var want struct {
		Patterns []string
		ReadErrs []string
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s %s: %v", name, ref, err)
	}
	filters := fc.Get("Filters")
	if isIntrinsic(fc) || filters == nil || filters.Kind != Sequence {
		if len(want.ReadErrs) == 0 {
			t.Errorf("%s %s: FilterCriteria unreadable, but the old reader read it", name, ref)
		}
		return
	}
	var got []string
	for _, f := range filters.Items {
		pat := f.Get("Pattern")
		switch {
		case pat == nil || pat.FindIntrinsic() != nil:
			got = append(got, "")
		case pat.Kind == Scalar:
			got = append(got, pat.Text)
		default:
			b, err := pat.AppendJSON(nil, 0)
			if err != nil {
				t.Errorf("%s %s: %v", name, ref, err)
			}
			got = append(got, string(b))
		}
	}
	if !slices.Equal(got, want.Patterns) {
		t.Errorf("%s %s: patterns\n got %q\nwant %q", name, ref, got, want.Patterns)
	}
}

// pinSpec is what klt invoke read of a function.
type pinSpec struct {
	CodeURI, BuildMethod, Arch string
	Timeout, Memory            int
	EnvOrder                   []string
	Env                        map[string]any
}

// TestPinnedInvoke: the functions, tables, queues and evaluated environments klt invoke read,
// through the model and an Evaluator with the local resources klt invoke makes (localHook).
func TestPinnedInvoke(t *testing.T) {
	for name, want := range pinnedTemplates(t) {
		if want.Invoke == nil {
			continue
		}
		tpl, err := ReadFile(pinPath(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var fns []string
		for _, r := range tpl.OfType(TypeFunction) {
			fns = append(fns, r.LogicalID)
		}
		sort.Strings(fns)
		if !slices.Equal(fns, want.Invoke.Functions) {
			t.Errorf("%s: functions %v, want %v", name, fns, want.Invoke.Functions)
		}
		hook := newLocalHook(tpl)
		for _, q := range want.Invoke.Queues {
			if hook.queues[q.ID] != q.Name {
				t.Errorf("%s: queue %s named %q, want %q", name, q.ID, hook.queues[q.ID], q.Name)
			}
		}
		for _, tb := range want.Invoke.Tables {
			if hook.tables[tb.ID] != tb.Name {
				t.Errorf("%s: table %s named %q, want %q", name, tb.ID, hook.tables[tb.ID], tb.Name)
			}
		}
		ev := &Evaluator{Template: tpl, Pseudo: LocalPseudo(), Resources: hook}
		for _, fn := range fns {
			checkSpec(t, name, tpl, ev, tpl.Resource(fn), want.Invoke.Specs[fn])
		}
	}
}

// checkSpec compares what the model gives of fn with what klt invoke read.
func checkSpec(t *testing.T, name string, tpl *Template, ev *Evaluator, fn *Resource, raw json.RawMessage) {
	t.Helper()
	var want pinSpec
	if json.Unmarshal(raw, &want) != nil { // the old reader refused the function
		if tpl.Property(fn, "CodeUri").IsString() && isNumberOrAbsent(tpl.Property(fn, "MemorySize")) {
			t.Errorf("%s: %s: the old reader refused it (%s), the model reads it plainly", name, fn.LogicalID, raw)
		}
		return
	}
	if got := filepath.ToSlash(filepath.Clean(tpl.Property(fn, "CodeUri").String())); got != want.CodeURI {
		t.Errorf("%s: %s CodeUri %q, want %q", name, fn.LogicalID, got, want.CodeURI)
	}
	if got := fn.Metadata.Get("BuildMethod").String(); got != want.BuildMethod {
		t.Errorf("%s: %s BuildMethod %q, want %q", name, fn.LogicalID, got, want.BuildMethod)
	}
	for key, w := range map[string]int{"Timeout": want.Timeout, "MemorySize": want.Memory} {
		n := tpl.Property(fn, key)
		if n == nil {
			continue
		}
		if f, err := n.Float(); err != nil || int(f) != w {
			t.Errorf("%s: %s %s is %v (%v), want %d", name, fn.LogicalID, key, f, err, w)
		}
	}
	env, err := tpl.Environment(fn)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var order []string
	for _, p := range env {
		order = append(order, p.Key)
		got, err := ev.Eval(p.Value)
		w := want.Env[p.Key]
		switch ws, _ := w.(string); {
		case strings.HasPrefix(ws, "ERR "):
			if err == nil {
				t.Errorf("%s: %s %s = %v; the old reader failed: %s", name, fn.LogicalID, p.Key, got, ws)
			}
		case ws == "NOVALUE":
			if got != NoValue {
				t.Errorf("%s: %s %s = %v, %v; want NoValue", name, fn.LogicalID, p.Key, got, err)
			}
		case err != nil || !reflect.DeepEqual(got, w):
			t.Errorf("%s: %s %s = %#v, %v; want %#v", name, fn.LogicalID, p.Key, got, err, w)
		}
	}
	if !slices.Equal(order, want.EnvOrder) {
		t.Errorf("%s: %s environment order %v, want %v", name, fn.LogicalID, order, want.EnvOrder)
	}
}

func isNumberOrAbsent(n *Node) bool {
	_, err := n.Float()
	return n == nil || err == nil
}

// localHook is what klt invoke makes of a template's tables and queues: local names (TableName
// or QueueName when written out, else the logical ID, .fifo added for a FIFO queue), local
// ARNs and URLs.
type localHook struct {
	tpl            *Template
	tables, queues map[string]string // logical ID -> local name
}

func newLocalHook(tpl *Template) *localHook {
	h := &localHook{tpl: tpl, tables: map[string]string{}, queues: map[string]string{}}
	for _, r := range tpl.OfType(TypeTable, TypeSimpleTable) {
		h.tables[r.LogicalID] = r.LogicalID
		if n := r.Properties.Get("TableName"); n.IsString() {
			h.tables[r.LogicalID] = n.Text
		}
	}
	for _, r := range tpl.OfType(TypeQueue) {
		name := r.LogicalID
		if n := r.Properties.Get("QueueName"); n.IsString() {
			name = n.Text
		}
		if r.Properties.Get("FifoQueue").String() == "true" && !strings.HasSuffix(name, ".fifo") {
			name += ".fifo"
		}
		h.queues[r.LogicalID] = name
	}
	return h
}

func (h *localHook) Ref(r *Resource) (any, error) {
	if n, ok := h.tables[r.LogicalID]; ok {
		return n, nil
	}
	if n, ok := h.queues[r.LogicalID]; ok {
		return "http://localhost:9324/123456789012/" + n, nil
	}
	return r.LogicalID, nil // as sam local invoke: the logical ID
}

func (h *localHook) GetAtt(r *Resource, attr string) (any, error) {
	if n, ok := h.tables[r.LogicalID]; ok {
		switch attr {
		case "Arn":
			return "arn:aws:dynamodb:us-east-1:123456789012:table/" + n, nil
		case "StreamArn":
			return "arn:aws:dynamodb:us-east-1:123456789012:table/" + n + "/stream/local", nil
		}
	}
	if n, ok := h.queues[r.LogicalID]; ok {
		switch attr {
		case "Arn":
			return "arn:aws:sqs:us-east-1:123456789012:" + n, nil
		case "QueueName":
			return n, nil
		case "QueueUrl":
			return "http://localhost:9324/123456789012/" + n, nil
		}
	}
	if r.Type == TypeFunction && attr == "Arn" {
		return "arn:aws:lambda:us-east-1:123456789012:function:" + r.LogicalID, nil
	}
	return nil, errors.New("no local value")
}
