package plancmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
)

// runPlan runs klt plan with args, as main does, and returns its exit code and output.
func runPlan(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Cmd.Run(context.Background(), Cmd, args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

// reportWith writes the klt local report of cmd/klt/testdata/plan (a small run of the sample
// stack) with the first figure named key set to the JSON text value, and returns its path.
func reportWith(t *testing.T, key, value string) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/plan/report.json")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `": [^,}\n]+`)
	loc := re.FindIndex(data)
	if loc == nil {
		t.Fatalf("the report has no %q", key)
	}
	data = append(append(append([]byte{}, data[:loc[0]]...), []byte(`"`+key+`": `+value)...), data[loc[1]:]...)
	name := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// configFile writes a --config file and returns its path.
func configFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanChecksEveryNumber: a figure out of its range, from a flag, a --config file or a
// --from-report file, is refused before it is used: one error, printed once, naming the field
// and where it came from (the flag; the file, position and key; the file and the report's
// JSON path), the figure as given, and its range; nothing on stdout; exit 2 for a flag, 1 for
// a file. On main the report's huge figures planned 1-byte records and exited 0, a window or
// invocation time of 1e300 or 1e13 became a negative duration blamed on --window or
// --duration, a batch size of -100 was blamed on the invocation time, a --config figure was
// named as a flag, and a flag's value was printed twice.
func TestPlanChecksEveryNumber(t *testing.T) {
	talk := []string{"--rate", "100", "--partitions", "5", "--duration", "300ms"}
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		code int
		want string   // the error, after "klt plan: " or, a file's, "klt: plan: " ($FILE: the file given)
		not  []string // what it must not say
	}{
		{"report record_bytes_mean 9.3e18", func(t *testing.T) []string {
			return []string{"--from-report", reportWith(t, "record_bytes_mean", "9.3e18")}
		}, 1, "--from-report $FILE: mappings[0].load.record_bytes_mean: 9.3e+18: want a mean record size, bytes, from 0 to 6291456", nil},
		{"report record_bytes_mean 1e300", func(t *testing.T) []string {
			return []string{"--from-report", reportWith(t, "record_bytes_mean", "1e300")}
		}, 1, "--from-report $FILE: mappings[0].load.record_bytes_mean: 1e+300: ", nil},
		{"report window_ms 1e300", func(t *testing.T) []string { return []string{"--from-report", reportWith(t, "window_ms", "1e300")} },
			1, "--from-report $FILE: mappings[0].config.window_ms: 1e+300: want a batching window, ms, from 0 to 300000", []string{"--window", "-2562047h"}},
		{"report invocation_ms_mean 1e13", func(t *testing.T) []string {
			return []string{"--from-report", reportWith(t, "invocation_ms_mean", "1e13")}
		}, 1, "--from-report $FILE: mappings[0].load.invocation_ms_mean: 1e+13: want an invocation's time, ms, above 0, at most 840000", []string{"--duration", "-2562047h"}},
		{"report batch_size -100", func(t *testing.T) []string { return []string{"--from-report", reportWith(t, "batch_size", "-100")} },
			1, "--from-report $FILE: mappings[0].config.batch_size: -100: want a BatchSize from 1 to 10000", []string{"invocation time"}},
		{"report records_per_second 1e300", func(t *testing.T) []string {
			return []string{"--from-report", reportWith(t, "records_per_second", "1e300")}
		}, 1, "--from-report $FILE: pipelines[0].records_per_second: 1e+300: ", nil},
		{"flag --rate 1e-300", func(*testing.T) []string { return []string{"--rate", "1e-300", "--duration", "1s"} },
			2, "--rate 1e-300: want records per second from 0.001 to 1000000000", nil},
		{"flag --rate abc", func(*testing.T) []string { return []string{"--rate", "abc", "--duration", "1s"} }, 2, "--rate abc: not a number", nil},
		{"flag --record-size 1e309", func(*testing.T) []string { return append([]string{"--record-size", "1e309"}, talk...) },
			2, "--record-size 1e309: not a size", nil},
		{"flag --batch-size 20000", func(*testing.T) []string { return append([]string{"--batch-size", "20000"}, talk...) },
			2, "--batch-size 20000: want 1 to 10000", nil},
		{"flag --queue lifo", func(*testing.T) []string { return append([]string{"--queue", "lifo"}, talk...) }, 2, "--queue lifo: want fifo or standard", nil},
		{"flag --price", func(*testing.T) []string { return append([]string{"--price", "lambda_gb_second=1e300"}, talk...) },
			2, "--price lambda_gb_second=1e300: ", nil},
		{"flag --duration 10s, 100 records past 14 minutes", func(*testing.T) []string { return []string{"--rate", "1", "--duration", "10s"} },
			2, "--duration 10s: an invocation of 100 records then lasts 1000 s, over the 14m0s", nil},
		{"config batch_size 20000", func(t *testing.T) []string {
			return []string{"--config", configFile(t, "c.yaml", "rate: 100\nduration: 1s\nbatch_size: 20000\n")}
		}, 1, "--config $FILE:3:13: batch_size: 20000: want 1 to 10000", []string{"--batch-size"}},
		{"config rate 1e12", func(t *testing.T) []string {
			return []string{"--config", configFile(t, "c.json", `{"rate": 1e12, "duration": "1s"}`)}
		},
			1, "--config $FILE:1:10: rate: 1e+12: want records per second from 0.001 to 1000000000", []string{"--rate"}},
		{"config rate 1e300", func(t *testing.T) []string {
			return []string{"--config", configFile(t, "c.yaml", "rate: 1e300\nduration: 1s\n")}
		},
			1, "--config $FILE:1:7: rate: 1e300: past klt's bound of 1e+15", nil},
		{"config maximum_pollers over a flag's file", func(t *testing.T) []string {
			return []string{"--config", configFile(t, "c.yaml", "maximum_pollers: 5000\n"), "--rate", "10", "--duration", "1s"}
		}, 1, "--config $FILE:1:18: maximum_pollers: 5000: want 1 to 2000", nil},
		{"config over the report", func(t *testing.T) []string {
			return []string{"--from-report", "../../testdata/plan/report.json", "--config", configFile(t, "c.yaml", "window: 10m\n")}
		}, 1, "--config $FILE:1:9: window: 10m0s: want 0 to 5m0s", []string{"report.json"}},
	} {
		args := tc.args(t)
		code, stdout, stderr := runPlan(t, args...)
		file := ""
		for i, a := range args {
			if (a == "--from-report" || a == "--config") && i+1 < len(args) {
				file = args[i+1]
			}
		}
		prefix := "klt plan: " // a command-line mistake
		if tc.code == 1 {
			prefix = "klt: plan: " // a file's
		}
		want := prefix + strings.ReplaceAll(tc.want, "$FILE", file)
		if code != tc.code || !strings.Contains(stderr, want) || stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %.200q; want exit %d, %q, no stdout", tc.name, code, stderr, stdout, tc.code, want)
		}
		// Printed once: one error line, the value as given once in it.
		if lines := strings.Count(stderr, "plan: "); lines != 1 {
			t.Errorf("%s: %d errors in %q, want 1", tc.name, lines, stderr)
		}
		for i := 0; i+1 < len(args); i++ {
			if v := args[i+1]; strings.HasPrefix(args[i], "--") && len(v) >= 3 && !strings.Contains(v, "/") && strings.Count(stderr, v) > 1 {
				t.Errorf("%s: %q printed %d times in %q", tc.name, args[i+1], strings.Count(stderr, args[i+1]), stderr)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(stderr, n) {
				t.Errorf("%s: the error says %q: %s", tc.name, n, stderr)
			}
		}
	}
}

// TestPlanUnreachedText: a design that does not reach the target shows no cost and no
// recommendation but why, and what lifts its bound; "cheaper" is said only of designs that
// reach the target; no figure is printed with hundreds of digits. On main the talk's direct
// design, which does not reach 100 records/s, had "monthly cost: $722.62" and a recommended
// configuration, a fan-out bound by its FIFO queue had "monthly cost: $0.00" and "recommended
// pollers 0 to 0" and did not say that a standard queue lifts the bound.
func TestPlanUnreachedText(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		design string   // the design that does not reach the target
		want   []string // in that design's text
		other  []string // in the whole text
	}{
		{"the talk's example: direct bound by 5 partitions", []string{"--rate", "100", "--partitions", "5", "--duration", "300ms", "--maximum-concurrency", "300"}, 0, "direct",
			[]string{"  reaches 100/s ", "no: does not reach the target: 5 partitions", "--partitions 30", "  monthly cost: none: direct does not reach the target\n", "  recommended         none"},
			[]string{"\ncheaper: fanout, $762.37 a month for 100 records/s, the only design that reaches it\n"}},
		{"a FIFO queue bounds the fan-out", []string{"--rate", "5000", "--duration", "10ms"}, 0, "fanout",
			[]string{"does not reach the target: queue: a FIFO queue", "--queue standard", "--high-throughput", "  monthly cost: none: fanout does not reach the target\n"}, nil},
		{"neither reaches", []string{"--rate", "20000", "--batch-size", "20", "--batch-duration", "50ms", "--partitions", "8"}, 1, "fanout",
			[]string{"--queue standard"}, []string{"\ncheaper: no design reaches 20,000 records/s\n"}},
	} {
		code, stdout, stderr := runPlan(t, tc.args...)
		if code != tc.code {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		start := strings.Index(stdout, "\n"+tc.design+": ")
		end := strings.Index(stdout[start+1:], "\n\n")
		if start < 0 || end < 0 {
			t.Fatalf("%s: no %s design in\n%s", tc.name, tc.design, stdout)
		}
		block := stdout[start : start+2+end]
		for _, w := range tc.want {
			if !strings.Contains(block, w) {
				t.Errorf("%s: the %s design has no %q:\n%s", tc.name, tc.design, w, block)
			}
		}
		for _, bad := range []string{"$0.00", "pollers 0 to 0", "monthly cost: $"} {
			if strings.Contains(block, bad) {
				t.Errorf("%s: the %s design, which does not reach the target, says %q:\n%s", tc.name, tc.design, bad, block)
			}
		}
		for _, w := range tc.other {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: the plan has no %q:\n%s", tc.name, w, stdout)
			}
		}
	}
}

// TestPlanNumbersPrinted: no figure of a plan is printed with more digits than a reader can
// take in. On main a rate of 1e-300 printed a 300-digit number.
func TestPlanNumbersPrinted(t *testing.T) {
	for _, v := range []float64{1e-300, 1e-7, 0.000123456, 1e300, 1.5e20, 123456789012345} {
		if s := fmtNum(v); len(s) > 24 {
			t.Errorf("fmtNum(%v) = %q, %d characters", v, s, len(s))
		}
	}
	// The smallest rate the model takes, with the page: its rate chart starts past the floor.
	code, stdout, stderr := runPlan(t, "--rate", "0.001", "--duration", "1s", "--report", filepath.Join(t.TempDir(), "plan"))
	if code != 0 {
		t.Fatalf("--rate 0.001: exit %d: %s", code, stderr)
	}
	for _, word := range strings.Fields(stdout) {
		if n := len(strings.Trim(word, "0123456789.,")); len(word)-n > 30 {
			t.Errorf("a figure of %d digits: %.60s...", len(word)-n, word)
		}
	}
}

// FuzzPlanInputs feeds any --from-report file and any --config file to klt plan's readers and
// then to the model, as RunPlan does: nothing panics; a file refused is named in the error; a
// figure the model refuses is named where it came from (the file, for a file's figure); a
// plan made prints as JSON and as text. The seeds hold huge and non-finite figures: JSON's
// 1e300 and 1e999, YAML's .inf and .nan, a mean record size past 2^63.
func FuzzPlanInputs(f *testing.F) {
	real, err := os.ReadFile("../../testdata/plan/report.json")
	if err != nil {
		f.Fatal(err)
	}
	rep := string(real)
	with := func(key, value string) string {
		re := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `": [^,}\n]+`)
		return re.ReplaceAllString(rep, `"`+key+`": `+value)
	}
	for _, seed := range [][2]string{
		{rep, ""},
		{with("record_bytes_mean", "9.3e18"), ""},
		{with("record_bytes_mean", "1e300"), ""},
		{with("window_ms", "1e300"), ""},
		{with("window_ms", "1e999"), ""},
		{with("invocation_ms_mean", "1e13"), ""},
		{with("invocation_ms_mean", "-0"), ""},
		{with("batch_size", "-100"), ""},
		{with("records_per_second", "1e-300"), ""},
		{with("concurrency_max", "9223372036854775807"), ""},
		{with("partitions_per_invocation", "NaN"), ""},
		{rep, "window: 10m\n"},
		{rep, "batch_size: -100\n"},
		{rep, "rate: 1e300\n"},
		{"", "rate: 1e300\nduration: 1s\n"},
		{"", "rate: .inf\nduration: 1s\n"},
		{"", "rate: -.inf\nduration: 1s\n"},
		{"", "rate: .nan\nduration: 1s\n"},
		{"", "rate: 1e-300\nduration: 1s\n"},
		{"", `{"rate": 1e308, "duration": 1e300}`},
		{"", `{"rate": 100, "duration": 9.3e18}`},
		{"", "rate: 1\nduration: 1ms\nrecord_size: 9.3e18\n"},
		{"", "rate: 1\nduration: 1ms\nrecord_size: 9300000000000000000\n"},
		{"", "rate: 1\nduration: 1ms\npartitions: 99999999999999999999\n"},
		{"", "rate: 1\nduration: 1ms\nprices:\n  lambda_gb_second: 1e300\n"},
		{"", "rate: 1\nduration: 1ms\nprices:\n  lambda_gb_second: .inf\n"},
		{"", "rate: 5000\nduration: 10ms\nfanout:\n  message_groups: 1e300\n"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, rep, conf string) {
		dir := t.TempDir()
		c := config{stat: "mean"}
		if rep != "" {
			c.fromReport = filepath.Join(dir, "report.json")
			if err := os.WriteFile(c.fromReport, []byte(rep), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if conf != "" {
			c.config = filepath.Join(dir, "plan.yaml")
			if err := os.WriteFile(c.config, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		in, _, err := c.input()
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("an error that names no file: %v", err)
			}
			return
		}
		if c.check(in) != nil {
			return
		}
		p, err := capacity.Make(in)
		if err != nil {
			if !errors.Is(err, capacity.ErrInput) {
				t.Fatalf("Make: %v", err)
			}
			where, fromFile := c.origin(err)
			if fromFile != strings.Contains(where.Error(), dir) {
				t.Fatalf("a refusal from a file (%v) that does not name it, or the reverse: %v", fromFile, where)
			}
			return
		}
		if _, err := planJSON(p); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := writeText(&b, in, p); err != nil {
			t.Fatal(err)
		}
		for _, word := range strings.Fields(b.String()) {
			if digits := len(word) - len(strings.Trim(word, "0123456789.,")); digits > 40 {
				t.Fatalf("a figure of %d digits: %.60s", digits, word)
			}
		}
	})
}

// TestPlanHelp: the help lists every flag with its default as AWS has it (MaximumPollers 200)
// and the ranges the figures are checked against.
func TestPlanHelp(t *testing.T) {
	code, stdout, stderr := runPlan(t, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, %s", code, stderr)
	}
	for _, want := range []string{"-maximum-pollers N", "(default 200, AWS's)", "0.001 to 1e9", "--config plan.yaml:3:13:", "what lifts its bound"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the help has no %q", want)
		}
	}
	if strings.Contains(stdout, "panic") {
		t.Errorf("the help has a panic:\n%s", stdout)
	}
}
