package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
)

// endless is standard input that never ends, as "klt event build < /dev/zero" gets: zero
// bytes, up to stop, after which it fails, so that a reader with no cap fails the test instead
// of the machine.
type endless struct{ n, stop int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.stop {
		return 0, errors.New("endless test input: read to the test's own stop, klt has no cap")
	}
	p = p[:min(int64(len(p)), e.stop-e.n)]
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

// TestEndlessStdin gives every command that reads standard input an endless one: each must
// stop one byte past its cap, say which cap, and exit 1.
func TestEndlessStdin(t *testing.T) {
	dir := t.TempDir()
	crit := filepath.Join(dir, "c.json")
	event := filepath.Join(dir, "e.json")
	tmpl := filepath.Join(dir, "template.yaml")
	for name, text := range map[string]string{
		crit:  `{"body": {"status": ["PLACED"]}}`,
		event: `{"Records": [{"messageId": "m-1", "eventSource": "aws:sqs", "body": "{}"}]}`,
		tmpl:  "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: fn\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		lim  input.Limit
	}{
		{"build", []string{"event", "build"}, input.LinesLimit},
		{"decode", []string{"event", "decode"}, input.EventLimit},
		{"filter test event", []string{"filter", "test", "--criteria", crit, "--event", "-"}, input.EventLimit},
		{"filter test criteria", []string{"filter", "test", "--criteria", "-", "--event", event}, input.TemplateLimit},
		{"filter lint", []string{"filter", "lint", "-"}, input.TemplateLimit},
		{"invoke", []string{"invoke", "--template", tmpl, "Fn", "-"}, input.EventLimit},
		{"produce", []string{"produce", "--brokers", "127.0.0.1:1", "--no-tls", "--topic", "t"}, input.LinesLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &endless{stop: 2 * input.LinesLimit.Max}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), tt.args, in, &stdout, &stderr)
			took := time.Since(start)
			want := (&input.TooLargeError{Name: "<stdin>", Limit: tt.lim}).Error()
			if code != base.ExitFail || !strings.Contains(stderr.String(), want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
			}
			if in.n > tt.lim.Max+1 {
				t.Errorf("read %d bytes of endless stdin; the cap is %d", in.n, tt.lim.Max)
			}
			if took > 10*time.Second {
				t.Errorf("took %v to give up on endless stdin", took)
			}
		})
	}
}

// TestLongLine: a JSON Lines line longer than maxLineBytes is an error at its line number,
// naming the cap, found before the whole line is in memory; one of exactly that length is not
// refused for its length.
func TestLongLine(t *testing.T) {
	ok := `{"topic":"t","value":"` + strings.Repeat("x", input.MaxLineBytes-24) + `"}`
	if len(ok) != input.MaxLineBytes {
		t.Fatalf("test line is %d bytes, want %d", len(ok), input.MaxLineBytes)
	}
	long := `{"topic":"t","value":"` + strings.Repeat("x", input.MaxLineBytes) + `"}`
	r := klt(t, ok+"\n"+long+"\n", "event", "build", "--compact")
	want := "klt: <stdin>:2: longer than 12582912 bytes (12 MB, klt's limit for one line of JSON Lines); klt read no further\n"
	if r.code != base.ExitFail || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
	if r := klt(t, ok+"\n", "event", "build", "--compact"); strings.Contains(r.stderr, "longer than") {
		t.Errorf("a line of exactly %d bytes refused: %s", input.MaxLineBytes, r.stderr)
	}
}

// billionLaughs is a template of 740 bytes whose aliases, nine levels of ten to the level
// before, expand to more than 10^9 nodes.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("Metadata:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		b.WriteString("  " + string(c) + ": &" + string(c) + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n")
		prev = string(c)
	}
	b.WriteString("Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: fn\n" +
		"      Environment:\n        Variables:\n          LAUGHS: *i\n")
	return b.String()
}

// TestBillionLaughs runs every template reader on a billion laughs: each refuses it at the
// alias that takes the expansion past maxYAMLNodes, at once and in a few megabytes (before,
// klt lint took 17 GB).
func TestBillionLaughs(t *testing.T) {
	path := writeFile(t, "laughs.yaml", billionLaughs())
	event := writeFile(t, "e.json", `{"Records": [{"messageId": "m-1", "eventSource": "aws:sqs", "body": "{}"}]}`)
	for name, args := range map[string][]string{
		"lint":        {"lint", path},
		"filter lint": {"filter", "lint", path},
		"filter test": {"filter", "test", "--criteria", path + "#Fn.Orders", "--event", event},
		"invoke":      {"invoke", "--template", path, "Fn", event},
		"env-vars":    {"env-vars", "--template", path, "-o", filepath.Join(t.TempDir(), "env.json")},
		"local":       {"local", "--template", path},
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			r := klt(t, "", args...)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			want := path + ":7:38: aliases expand the template past 1000000 nodes, klt's limit"
			if r.code != base.ExitFail || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MB to refuse a 740-byte template", alloc>>20)
			}
			if took > 5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}
