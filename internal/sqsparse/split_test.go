package sqsparse_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/sqsparse"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// splitAgrees fails t unless Parse with the Records array split between two goroutines,
// whatever its size (split.go), gives what Parse gave (got, err): the same event, value for
// value, or the same error. agree calls it, so that every differential test and the fuzz
// target hold the split to encoding/json too.
func splitAgrees(t testing.TB, name string, data []byte, got *events.SQSEvent, err error) {
	t.Helper()
	sgot, _, serr := sqsparse.ParseSplit(data, 0)
	alone, aerr := sqsparse.ParseAlone(data)
	for _, c := range []struct {
		what string
		ev   *events.SQSEvent
		err  error
	}{{"split", sgot, serr}, {"in one goroutine", alone, aerr}} {
		if fmt.Sprint(c.err) != fmt.Sprint(err) {
			t.Fatalf("%s: Parse %s says %v, Parse says %v\npayload: %s", name, c.what, c.err, err, show(data))
		}
		if !reflect.DeepEqual(c.ev, got) {
			t.Fatalf("%s: Parse %s and Parse give different events\npayload: %s", name, c.what, show(data))
		}
	}
}

// A large event is split when GOMAXPROCS allows, and gives the event of Parse in one
// goroutine, value for value; a fault in either half gives the error Parse gives in one
// goroutine, which names the first fault of the payload.
func TestSplitAgrees(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
	}
	big := sqsgen.Event(2000, 200) // about 2 MB
	got, split, err := sqsparse.ParseSplit(big, 256<<10)
	if err != nil || !split {
		t.Fatalf("ParseSplit: split %v, %v", split, err)
	}
	alone, err := sqsparse.ParseAlone(big)
	if err != nil || !reflect.DeepEqual(got, alone) || len(got.Records) != 2000 {
		t.Fatalf("split and alone differ (%d messages against %d), %v", len(got.Records), len(alone.Records), err)
	}
	if ev, err := sqsparse.Parse(big); err != nil || !reflect.DeepEqual(ev, alone) {
		t.Fatalf("Parse and alone differ: %v", err)
	}
	// Faults in the first part, in the second, and in both: a body of the wrong type, a
	// syntax error, and both, where the syntax error comes later but encoding/json reports
	// it first.
	i1 := bytes.Index(big, []byte(`"body":`))
	i2 := bytes.LastIndex(big, []byte(`"body":`))
	for name, edit := range map[string]func(d []byte){
		"type error, first part":  func(d []byte) { copy(d[i1+len(`"body":`):], `4`) },
		"type error, second part": func(d []byte) { copy(d[i2+len(`"body":`):], `4`) },
		"syntax error, second part, after a type error in the first": func(d []byte) {
			copy(d[i1+len(`"body":`):], `4`)
			copy(d[i2:], `}`)
		},
		"syntax error at the split": func(d []byte) {
			at := len(d) * 3 / 5
			d[at+bytes.Index(d[at:], []byte("},{"))+1] = ']'
		},
	} {
		d := bytes.Clone(big)
		edit(d)
		_, serr := sqsparse.Parse(d)
		_, aerr := sqsparse.ParseAlone(d)
		if serr == nil || fmt.Sprint(serr) != fmt.Sprint(aerr) {
			t.Errorf("%s: Parse says %v, in one goroutine %v", name, serr, aerr)
		}
		agree(t, name, d)
	}
}

// Random events of every shape agree split at every size (agree holds each to encoding/json,
// splitAgrees to Parse), here with many messages, so that the second goroutine starts late
// in the array, at 3/5 of its bytes.
func TestSplitRandomEventsAgree(t *testing.T) {
	for seed := range 200 {
		g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 21)), many: 1 + seed%40, bad: seed%4 == 3, dups: seed%5 == 4}
		agree(t, fmt.Sprintf("seed %d", seed), g.event())
	}
}
