package plancmd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
)

func TestParseSize(t *testing.T) {
	// Sizes are bytes or a number with a unit, each K 1,024 as AWS's limits count them.
	for in, want := range map[string]int{
		"0": 0, "1024": 1024, "1KB": 1024, "1kb": 1024, "1KiB": 1024, "64 KB": 65536, "1.5MiB": 1572864,
		"6MB": 6291456, "1GB": 1 << 30, "300B": 300, " 7 ": 7, "1024GiB": 1 << 40,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KB", "-1", "-1KB", "1e3", "1e309", "1.5", "0.1B", "1.2.3KB", "1TB", "1025GiB", "１KB", "1 K B", ".5KB", "5.KB", "0x10", "NaN", "Inf"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseFigures(t *testing.T) {
	for in, want := range map[string]time.Duration{"300ms": 300 * time.Millisecond, "1.5s": 1500 * time.Millisecond, "0": 0, "8760h": 8760 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"300", "-1s", "8761h", "1e309s", "µ", "forever"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q): no error", in)
		}
	}
	for _, in := range []string{"1e309", "NaN", "Inf", "-1", "2e15", "1,000", ""} {
		if _, err := parseNumber(in); err == nil {
			t.Errorf("parseNumber(%q): no error", in)
		}
	}
	if _, err := parseCount("-1", -1); err != nil {
		t.Errorf("parseCount(-1, -1): %v", err)
	}
	for _, in := range []string{"-2", "1.5", "1e3", "99999999999999999999", "2000000000"} {
		if _, err := parseCount(in, -1); err == nil {
			t.Errorf("parseCount(%q): no error", in)
		}
	}
}

func TestOptionsCoverInput(t *testing.T) {
	// Every field of capacity.Input is an option (a flag and a --config key) or a price, once:
	// a field added to the contract without an option fails here.
	keys := map[string]bool{}
	var walk func(t reflect.Type, prefix string)
	walk = func(ty reflect.Type, prefix string) {
		for i := range ty.NumField() {
			name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
			switch {
			case prefix == "" && name == "prices":
			case ty.Field(i).Type.Kind() == reflect.Struct && ty.Field(i).Type != reflect.TypeFor[capacity.Duration]():
				walk(ty.Field(i).Type, prefix+name+".")
			default:
				keys[prefix+name] = true
			}
		}
	}
	walk(reflect.TypeFor[capacity.Input](), "")
	flags := map[string]bool{}
	for _, o := range options {
		if !keys[o.key] {
			t.Errorf("option %q is no field of capacity.Input", o.key)
		}
		if flags[o.flagName()] {
			t.Errorf("flag --%s twice", o.flagName())
		}
		flags[o.flagName()] = true
		delete(keys, o.key)
	}
	for k := range keys {
		t.Errorf("capacity.Input's %q has no option", k)
	}
	if len(priceFields) != reflect.TypeFor[capacity.Prices]().NumField() {
		t.Errorf("%d price names for %d prices", len(priceFields), reflect.TypeFor[capacity.Prices]().NumField())
	}
}

// FuzzFigures feeds any text to the parsers of sizes, durations and numbers, as a flag and as
// the value of a --config key (YAML and JSON): none panics, and what each accepts is within its
// bounds; the file and the flag agree.
func FuzzFigures(f *testing.F) {
	for _, s := range []string{"1024", "1KB", "1.5MiB", "1e309", "-1", "-0", "１KB", "µs", "300ms", "99999999999999999999999", "9223372036854775807", "1e15", "NaN", "+Inf", "0x10", "1_000", "\x00", "\"", "{a: 1}", "[1,", "&a *a", strings.Repeat("9", 400),
		"1e300", "-1e300", "9.3e18", "1e-300", "1e999", ".inf", "-.inf", ".nan", ".NaN", "Infinity", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && (n < 0 || n > maxSize) {
			t.Errorf("ParseSize(%q) = %d", s, n)
		}
		if d, err := ParseDuration(s); err == nil && (d < 0 || d > maxDuration) {
			t.Errorf("ParseDuration(%q) = %v", s, d)
		}
		if v, err := parseNumber(s); err == nil && !(v >= 0 && v <= maxNumber) {
			t.Errorf("parseNumber(%q) = %v", s, v)
		}
		for _, key := range []string{"record_size", "duration", "rate", "partitions"} {
			var fromFlag, fromYAML, fromJSON capacity.Input
			flagErr := optionByKey(key).value(&fromFlag).Set(s)
			yamlErr := ReadConfig("f.yaml", []byte(key+": "+s+"\n"), &fromYAML)
			js, _ := json.Marshal(map[string]string{key: s})
			jsonErr := ReadConfig("f.json", js, &fromJSON)
			if yamlErr == nil && flagErr == nil && !reflect.DeepEqual(fromFlag, fromYAML) {
				t.Errorf("%s %q: the flag reads %+v, the YAML file %+v", key, s, fromFlag, fromYAML)
			}
			if jsonErr == nil && (flagErr != nil || !reflect.DeepEqual(fromFlag, fromJSON)) {
				t.Errorf("%s %q: the JSON string is read (%+v) where the flag is %v", key, s, fromJSON, flagErr)
			}
		}
	})
}
