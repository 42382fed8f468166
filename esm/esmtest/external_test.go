package esmtest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// userModule is the module of a toolkit user: a go.mod that requires the toolkit and its esm
// module (replaced by this checkout), and a test that puts a handler of its own behind a Kafka
// mapping, importing esmtest alone.
const userGoMod = `module example.com/orders

go 1.26.0

require (
	github.com/kafkalambda/toolkit v0.0.0
	github.com/kafkalambda/toolkit/esm v0.0.0
)

replace (
	github.com/kafkalambda/toolkit => %s
	github.com/kafkalambda/toolkit/esm => %s/esm
)
`

const userTest = `package orders

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/esm/esmtest"
)

// handle is the user's function: aws-lambda-go's own Kafka event type.
func handle(_ context.Context, ev events.KafkaEvent) error {
	for _, recs := range ev.Records {
		for _, r := range recs {
			if r.Value == "" {
				return errors.New("empty record")
			}
		}
	}
	return nil
}

func run(t *testing.T) *esmtest.Kafka {
	k := esmtest.NewKafka(t, lambda.NewHandler(handle), esmtest.KafkaMapping{
		Topics: []string{"orders"}, BatchSize: 2, MaximumBatchingWindow: new(100 * time.Millisecond)})
	k.Produce(kgo.StringRecord("a"), kgo.StringRecord("b"), kgo.StringRecord("c"))
	if err := k.WaitIdle(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRight(t *testing.T) {
	k := run(t)
	if got := k.Committed()[0]; got != 3 {
		t.Errorf("committed %d, want 3", got)
	}
	for _, inv := range k.Invocations() {
		if inv.Err != nil || len(inv.Records) > 2 {
			t.Errorf("invocation %d: %d records, %v", inv.N, len(inv.Records), inv.Err)
		}
	}
}

func TestWrong(t *testing.T) {
	k := run(t)
	if got := k.Committed()[0]; got != 4 {
		t.Errorf("deliberately wrong: committed %d, want 4", got)
	}
}
`

// The package works from another module, as a user gets it: a temporary module requiring the
// toolkit (replaced by this checkout, go.sum copied), tested offline (GOPROXY=off, the module
// cache as it is) with no node on PATH: the Kafka mapping needs no Node and no Docker. Its
// right assertion passes and its deliberately wrong one fails.
func TestExternalModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	// PATH is a directory of its own with go and the C toolchain (so that the build cache
	// built for this test binary, with cgo, serves the user's module too: a build without cgo
	// would rebuild everything), and nothing else: no node.
	binDir := t.TempDir()
	link := func(name, path string) {
		if err := os.Symlink(path, filepath.Join(binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("go", goBin)
	cgo := "CGO_ENABLED=0"
	if cc, err := exec.LookPath("gcc"); err == nil {
		cgo = "CGO_ENABLED=1"
		link("gcc", cc)
		for _, tool := range []string{"as", "ld"} {
			if p, err := exec.LookPath(tool); err == nil {
				link(tool, p)
			}
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := goEnv(t, goBin, "GOMODCACHE", "GOCACHE")
	env = append(env, cgo, "CC=gcc")

	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), strings.ReplaceAll(userGoMod, "%s", root))
	write(t, filepath.Join(dir, "orders_test.go"), userTest)
	var sum []byte
	for _, mod := range []string{root, filepath.Join(root, "esm")} {
		b, err := os.ReadFile(filepath.Join(mod, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		sum = append(sum, b...)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))

	goTest := func(run string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
		defer cancel()
		args := []string{"test", "-count=1", "-run", run}
		if raceBuild {
			args = append(args, "-race")
		}
		cmd := exec.CommandContext(ctx, goBin, append(args, ".")...)
		cmd.Dir = dir
		cmd.Env = append(env, "PATH="+binDir, "HOME="+dir, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off",
			"GOTOOLCHAIN=local", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	start := time.Now()
	if out, err := goTest("^TestRight$"); err != nil {
		t.Fatalf("go test of the user's module: %v\n%s", err, out)
	}
	t.Logf("the user's module: built and passed in %v", time.Since(start).Round(time.Millisecond))
	out, err := goTest("^TestWrong$")
	if err == nil || !strings.Contains(out, "deliberately wrong: committed 3, want 4") || !strings.Contains(out, "--- FAIL: TestWrong") {
		t.Errorf("the deliberately wrong assertion: %v\n%s", err, out)
	}
}

// goEnv returns NAME=value for each of names, as go env reports them.
func goEnv(t *testing.T, goBin string, names ...string) []string {
	t.Helper()
	out, err := exec.Command(goBin, append([]string{"env"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	vals := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(vals) != len(names) {
		t.Fatalf("go env %v: %q", names, out)
	}
	env := make([]string, len(names))
	for i, n := range names {
		env[i] = n + "=" + vals[i]
	}
	return env
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
