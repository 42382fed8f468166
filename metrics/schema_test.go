package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// The EMF specification's JSON schema (testdata/README.md says where it comes from), checked
// by a validator of the keywords it uses (type, required, properties, items, minItems,
// maxItems, minLength, maxLength, pattern): the root module takes no JSON Schema library for
// a test. A keyword the validator does not know fails the test, so that a newer schema is not
// half checked.

var (
	schemaOnce sync.Once
	schema     map[string]any
	schemaErr  error
)

func loadSchema(t testing.TB) map[string]any {
	t.Helper()
	schemaOnce.Do(func() {
		b, err := os.ReadFile("testdata/emf.schema.json")
		if err != nil {
			schemaErr = err
			return
		}
		schemaErr = json.Unmarshal(b, &schema)
	})
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schema
}

var knownKeywords = map[string]bool{
	"type": true, "required": true, "properties": true, "items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "$id": true, "title": true, "examples": true,
}

func validate(s map[string]any, v any, path string) error {
	for k := range s {
		if !knownKeywords[k] {
			return fmt.Errorf("schema keyword %q at %s: the validator does not know it", k, path)
		}
	}
	if typ, ok := s["type"].(string); ok {
		if err := checkType(typ, v, path); err != nil {
			return err
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[r.(string)]; !ok {
					return fmt.Errorf("%s: required member %q missing", path, r)
				}
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for name, sub := range props {
				if mv, ok := v[name]; ok {
					if err := validate(sub.(map[string]any), mv, path+"/"+name); err != nil {
						return err
					}
				}
			}
		}
	case []any:
		if n, ok := s["minItems"].(float64); ok && float64(len(v)) < n {
			return fmt.Errorf("%s: %d items, fewer than %v", path, len(v), n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(v)) > n {
			return fmt.Errorf("%s: %d items, more than %v", path, len(v), n)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range v {
				if err := validate(items, e, fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
		}
	case string:
		n := utf8.RuneCountInString(v)
		if m, ok := s["minLength"].(float64); ok && float64(n) < m {
			return fmt.Errorf("%s: %q shorter than %v", path, v, m)
		}
		if m, ok := s["maxLength"].(float64); ok && float64(n) > m {
			return fmt.Errorf("%s: %d characters, more than %v", path, n, m)
		}
		if p, ok := s["pattern"].(string); ok {
			// JSON Schema patterns are ECMA-262; this schema's (^(.*)$, an alternation of words
			// with \/) mean the same in Go's RE2.
			if !regexp.MustCompile(p).MatchString(v) {
				return fmt.Errorf("%s: %q does not match %s", path, v, p)
			}
		}
	}
	return nil
}

func checkType(typ string, v any, path string) error {
	ok := false
	switch typ {
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "string":
		_, ok = v.(string)
	case "integer":
		var f float64
		f, ok = v.(float64)
		ok = ok && f == math.Trunc(f)
	case "number":
		_, ok = v.(float64)
	default:
		return fmt.Errorf("%s: schema type %q unknown to the validator", path, typ)
	}
	if !ok {
		return fmt.Errorf("%s: %v is not of type %s", path, v, typ)
	}
	return nil
}

// checkEMF checks one line against the schema and against what the specification says beyond
// it, and returns the document.
func checkEMF(t testing.TB, line []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, line)
	}
	if dec.More() {
		t.Fatalf("data after the JSON object: %s", line)
	}
	if err := validate(loadSchema(t), doc, ""); err != nil {
		t.Fatalf("against the EMF schema: %v\n%s", err, line)
	}
	if err := checkSpec(doc); err != nil {
		t.Fatalf("against the EMF specification: %v\n%s", err, line)
	}
	return doc
}

// checkSpec: the specification's rules the schema does not hold.
func checkSpec(doc map[string]any) error {
	aws := doc["_aws"].(map[string]any)
	for _, d := range aws["CloudWatchMetrics"].([]any) {
		dir := d.(map[string]any)
		ms := dir["Metrics"].([]any)
		if len(ms) > MaxMetrics {
			return fmt.Errorf("%d MetricDefinitions, more than 100", len(ms))
		}
		for _, set := range dir["Dimensions"].([]any) {
			for _, name := range set.([]any) {
				v, ok := doc[name.(string)]
				if !ok {
					return fmt.Errorf("dimension %q has no target member", name)
				}
				s, ok := v.(string)
				if !ok {
					return fmt.Errorf("dimension target %q is not a string: %v", name, v)
				}
				if utf8.RuneCountInString(s) > 1024 {
					return fmt.Errorf("dimension target %q is longer than 1024 characters", name)
				}
			}
		}
		for _, m := range ms {
			md := m.(map[string]any)
			name := md["Name"].(string)
			switch v := doc[name].(type) {
			case float64:
			case []any:
				if len(v) > MaxValues {
					return fmt.Errorf("metric %q has %d values, more than 100", name, len(v))
				}
				for _, e := range v {
					if _, ok := e.(float64); !ok {
						return fmt.Errorf("metric %q has a value that is not a number: %v", name, e)
					}
				}
			case nil:
				return fmt.Errorf("metric %q has no target member", name)
			default:
				return fmt.Errorf("metric %q target is not a number: %v", name, v)
			}
			if r, ok := md["StorageResolution"]; ok && r != float64(1) && r != float64(60) {
				return fmt.Errorf("metric %q StorageResolution %v", name, r)
			}
		}
	}
	return nil
}

// The validator refuses what the schema refuses: a test of the test.
func TestSchemaValidatorRefuses(t *testing.T) {
	s := loadSchema(t)
	valid := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["d"]],"Metrics":[{"Name":"m","Unit":"Count"}]}]},"d":"x","m":1}`
	var doc any
	if err := json.Unmarshal([]byte(valid), &doc); err != nil {
		t.Fatal(err)
	}
	if err := validate(s, doc, ""); err != nil {
		t.Fatalf("the specification's shape refused: %v", err)
	}
	for name, bad := range map[string]string{
		"no _aws":       `{"m":1}`,
		"no timestamp":  `{"_aws":{"CloudWatchMetrics":[]}}`,
		"float time":    `{"_aws":{"Timestamp":1.5,"CloudWatchMetrics":[]}}`,
		"bad unit":      `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":"m","Unit":"Counts"}]}]}}`,
		"no dimensions": `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[],"Metrics":[]}]}}`,
		"31 dims":       `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[` + strings.Repeat(`"d",`, 30) + `"d"]],"Metrics":[]}]}}`,
		"empty name":    `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[[]],"Metrics":[{"Name":""}]}]}}`,
		"empty ns":      `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"","Dimensions":[[]],"Metrics":[]}]}}`,
	} {
		var doc any
		if err := json.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(name, err)
		}
		if validate(s, doc, "") == nil {
			t.Errorf("%s: the validator accepted %s", name, bad)
		}
	}
	var doc2 map[string]any
	_ = json.Unmarshal([]byte(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["d"]],"Metrics":[{"Name":"m"}]}]},"m":1}`), &doc2)
	if checkSpec(doc2) == nil {
		t.Error("a dimension without its target member was accepted")
	}
}
