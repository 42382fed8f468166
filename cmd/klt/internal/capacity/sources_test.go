package capacity

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEveryFigureCited: every figure, stage and cost line of a plan says its formula and
// the documented limit or price it rests on, with the page's address.
func TestEveryFigureCited(t *testing.T) {
	for _, in := range []Input{
		{Rate: 20_000, BatchSize: 20, BatchDuration: ms(50), Burst: 30_000, BurstFor: Duration(time.Minute), EgressBytes: 10},
		{Rate: 100, Duration: ms(10), Mode: "on-demand", Fanout: Fanout{Queue: "standard", MaximumConcurrency: 50}},
		{Rate: 1_000, Duration: ms(5), PollerGroup: true, Fanout: Fanout{HighThroughput: true}},
	} {
		p := mustMake(t, in)
		for _, d := range []Design{p.Direct, p.Fanout} {
			for _, f := range d.Figures {
				if f.Formula == "" || !strings.Contains(f.Source, "https://") || f.Unit == "" {
					t.Errorf("%s: figure %+v without formula, unit or source", d.Name, f)
				}
			}
			for _, s := range d.Stages {
				if s.Formula == "" || s.Bound == "" || !strings.Contains(s.Source, "https://") {
					t.Errorf("%s: stage %+v without formula, bound or source", d.Name, s)
				}
			}
			for _, l := range d.CostLines {
				if l.Formula == "" || !strings.Contains(l.Source, "https://") || l.UnitPrice <= 0 {
					t.Errorf("%s: cost line %+v without formula, source or price", d.Name, l)
				}
				if strings.HasPrefix(l.Item, "SQS") && in.Fanout.Queue == "" && (!strings.Contains(l.Item, "FIFO") || l.UnitPrice != 0.50) {
					t.Errorf("FIFO queue: %q at $%v, want the FIFO price $0.50", l.Item, l.UnitPrice)
				}
			}
		}
		for _, f := range p.LMI.Figures {
			if f.Formula == "" || !strings.Contains(f.Source, "https://") || f.Unit == "" {
				t.Errorf("lmi: figure %+v without formula, unit or source", f)
			}
		}
		for _, l := range p.LMI.CostLines {
			if l.Formula == "" || !strings.Contains(l.Source, "https://") || l.UnitPrice <= 0 {
				t.Errorf("lmi: cost line %+v without formula, source or price", l)
			}
			if strings.HasPrefix(l.Item, "EC2 instances") && !strings.HasPrefix(l.Source, "NOT CONFIRMED") {
				t.Errorf("lmi: the instance price %q is cited as confirmed: %s", l.Item, l.Source)
			}
		}
		if len(p.LMI.Unconfirmed) == 0 {
			t.Error("lmi: nothing listed as unconfirmed, though the instance prices are")
		}
		if len(p.Notes) == 0 {
			t.Error("no notes")
		}
	}
}

// TestInputRoundTrip: a plan's filled Input, written as JSON and read back, makes the same
// plan (durations travel as milliseconds).
func TestInputRoundTrip(t *testing.T) {
	p := mustMake(t, Input{Rate: 500, Duration: ms(2.5), LowLatency: true, Burst: 900, BurstFor: Duration(90 * time.Second), Fanout: Fanout{HighThroughput: true}})
	b, err := json.Marshal(p.Input)
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	q := mustMake(t, in)
	if !reflect.DeepEqual(p, q) {
		t.Errorf("read back from %s: a different plan", b)
	}
}
