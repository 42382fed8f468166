package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// TestLocalFlags: flags that contradict each other are refused before anything starts, each
// with what to give instead.
func TestLocalFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--records", "r.jsonl", "--generate", "{}"}, "give one of them"},
		{[]string{"--load", "5"}, "--load needs records"},
		{[]string{"--generate", `{"n":{{seq}}}`}, "--generate needs --load N"},
		{[]string{"--keys", "5", "--records", "r.jsonl"}, "--keys goes with --generate"},
		{[]string{"--header", "correlation-id=c", "--records", "r.jsonl"}, "--header goes with --generate"},
		{[]string{"--header", "=x", "--generate", "x", "--load", "1"}, "want NAME=TEMPLATE"},
		{[]string{"--header", "c={{n}}", "--generate", "x", "--load", "1"}, "unknown placeholder {{n}}"},
		{[]string{"--repeat", "2", "--generate", "x", "--load", "1"}, "--repeat goes with --records"},
		{[]string{"--work", "1s", "--records", "r.jsonl"}, "goes with --http-sink"},
		{[]string{"--fault", "timeout:seq=1"}, "go with a load"},
		{[]string{"--fault", "http:seq=1", "--records", "r.jsonl"}, "give --http-sink PARAM"},
		{[]string{"--fault-load", "5", "--records", "r.jsonl"}, "give at least one --fault"},
		{[]string{"--fault", "poison:seq=1"}, `unknown kind "poison"`},
		{[]string{"--fault", "timeout:3"}, "want seq=N"},
		{[]string{"--faults", "60"}, "flag provided but not defined: -faults"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"local"}, c.args...), nil, &stdout, &stderr)
		if code != base.ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("klt local %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr.String(), base.ExitUsage, c.want)
		}
	}
}
