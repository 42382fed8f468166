package report

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"

	"golang.org/x/net/html"
)

// cardWidth is the content width of a section of the page: main's max-width 1120 px less its
// padding (2 x 24), the section's padding (2 x 20) and border (2 x 1).
const cardWidth = 1120 - 48 - 40 - 2

// minTableWidth estimates the narrowest a table can be laid out, as a browser does it with the
// page's style: each column as wide as its widest cell's unbreakable content (a nowrap cell's
// whole text; a header's or a wrapping cell's longest word), at 7.2 px a character of 13 px
// text, plus 10 px of padding. No browser is on the machine that wrote this (no chromium,
// chromium-browser or google-chrome): this is the check a screenshot would have made.
func minTableWidth(table *html.Node) float64 {
	var widths []float64
	for tr := range table.Descendants() {
		if tr.Type != html.ElementNode || tr.Data != "tr" {
			continue
		}
		i := 0
		for c := tr.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || (c.Data != "td" && c.Data != "th") {
				continue
			}
			text := strings.TrimSpace(textOf(c))
			unbreakable := text
			if c.Data == "th" || attr(c, "class") == "text" {
				unbreakable = ""
				for _, w := range strings.Fields(text) {
					if len(w) > len(unbreakable) {
						unbreakable = w
					}
				}
			}
			w := float64(len([]rune(unbreakable)))*7.2 + 10
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], w)
			i++
		}
	}
	sum := 0.0
	for _, w := range widths {
		sum += w
	}
	return sum
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// With make demo's three pipelines (direct, fan-out, and direct with key concurrency), the
// pipelines' tables fit their card: no table of the section is wider than the card at its
// narrowest, and each pipeline has its row in each.
func TestPipelineTablesFitTheCard(t *testing.T) {
	r := sampleReport()
	kc := r.Pipelines[0]
	kc.Name, kc.Functions, kc.Mappings = "direct, KeyConcurrency=100", []string{"KeyConcurrentConsumer"}, []string{"KeyConcurrentConsumerMapping"}
	kc.RecordsPerSecond = 512.3
	r.Pipelines = append(r.Pipelines, kc)
	r.Mappings = append(r.Mappings, Mapping{Name: "KeyConcurrentConsumerMapping", Function: "KeyConcurrentConsumer", Source: "orders", In: 500, Delivered: 500, Succeeded: 500})
	doc, err := html.Parse(strings.NewReader(renderHTML(t, r)))
	if err != nil {
		t.Fatal(err)
	}
	var section *html.Node
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "section" && attr(n, "id") == "pipelines" {
			section = n
		}
	}
	if section == nil {
		t.Fatal("no section#pipelines")
	}
	tables := 0
	for n := range section.Descendants() {
		if n.Type != html.ElementNode || n.Data != "table" {
			continue
		}
		tables++
		if w := minTableWidth(n); w > cardWidth {
			t.Errorf("table#%s is at least %.0f px wide, its card %d px", attr(n, "id"), w, cardWidth)
		}
		if id := attr(n, "id"); id == "pipeline-table" || id == "pipeline-fates" {
			text := textOf(n)
			for _, p := range r.Pipelines {
				if !strings.Contains(text, p.Name) {
					t.Errorf("table#%s has no row for pipeline %q", id, p.Name)
				}
			}
		}
	}
	if tables < 3 {
		t.Errorf("%d tables in section#pipelines, want the pipelines', their fates' and the resources'", tables)
	}
}

// The speedup line and the bars put a third pipeline against direct, as the fan-out is.
func TestThirdPipelineAgainstDirect(t *testing.T) {
	r := sampleReport()
	kc := r.Pipelines[0]
	kc.Name, kc.RecordsPerSecond = "direct, KeyConcurrency=100", 498
	r.Pipelines = append(r.Pipelines, kc)
	if got, want := speedupText(r, r.Speedup), "; direct, KeyConcurrency=100 is 30.0x direct: 498 records/s"; !strings.HasSuffix(got, want) {
		t.Errorf("speedup text %q, want it to end with %q", got, want)
	}
	bars := barChart(loadPipelines(r.Pipelines), r.Speedup, chartWidth).element("")
	for _, want := range []string{">direct, KeyConcurrency=100<", "498 records/s (30.0&#215; direct)", "517 records/s (31.1&#215; direct)"} {
		if !strings.Contains(bars, want) {
			t.Errorf("bars without %q", want)
		}
	}
}

// Two pipelines whose functions share a failure queue (make demo's consumer and its
// --variant): each lists the message its own function sent, not the other's as a duplicate.
func TestSharedFailureQueueMessagesBySender(t *testing.T) {
	l := ledger.New()
	id := ledger.RecordID{Topic: "orders", Partition: 3, Offset: 12}
	l.Produced(ledger.Input{ID: id, Key: []byte("k"), At: time.Now(), Phase: "faults"})
	send := func(fn, msg string) ledger.Effect {
		return ledger.Effect{Kind: ledger.EffectQueue, Resource: "ConsumerFailureQueue", Function: fn, Record: id, Via: ledger.ViaEnvelope, Op: "SendMessage", Failure: "invalid order", ID: msg, At: time.Now()}
	}
	listed := func(msg string) ledger.Effect {
		return ledger.Effect{Kind: ledger.EffectQueue, Resource: "ConsumerFailureQueue", Record: id, Via: ledger.ViaEnvelope, Op: ledger.OpListed, Failure: "invalid order", ID: msg, At: time.Now()}
	}
	effects := []ledger.Effect{send("ConsumerFunction", "m1"), send("KeyConcurrentConsumer", "m2"), listed("m1"), listed("m2")}
	for _, e := range effects {
		l.AddEffect(e)
	}
	r := &Report{}
	for _, fn := range []string{"ConsumerFunction", "KeyConcurrentConsumer"} {
		// The account holds the pipeline's own function's send and every listing, as
		// ledger.Account makes it; the other function's send is in the ledger only.
		own := []ledger.Effect{send(fn, map[string]string{"ConsumerFunction": "m1", "KeyConcurrentConsumer": "m2"}[fn]), listed("m1"), listed("m2")}
		acc := ledger.PipelineAccount{
			Records: []ledger.RecordAccount{{ID: id, Key: []byte("k"), Fate: ledger.FateFailureQueue, Deliveries: map[string]int{fn + "Mapping": 1}, Effects: own}},
			Fates:   map[string]int{ledger.FateFailureQueue: 1}, Attempts: 1,
		}
		r.AddPipeline(LedgerPipeline{Name: fn, Functions: []string{fn}, Mappings: []string{fn + "Mapping"},
			Queues: map[string]bool{"ConsumerFailureQueue": true}, Faulted: true, Seconds: 1, Account: acc, Ledger: l})
	}
	if len(r.FailedMessages) != 2 || r.FailedMessages[0].Pipeline != "ConsumerFunction" || r.FailedMessages[1].Pipeline != "KeyConcurrentConsumer" {
		t.Errorf("failed messages %+v, want one per pipeline", r.FailedMessages)
	}
	for _, p := range r.Pipelines {
		if got := p.FailureQueue; !got.Is(1) {
			t.Errorf("%s: failure queue %v, want 1", p.Name, got)
		}
	}
}

// A phase's name is cut to its band on the charts, so that it does not run into the next one's.
func TestPhaseLabelsFitTheirBands(t *testing.T) {
	for w, want := range map[float64]int{30: 4, 100: 14, 182: 28, 900: 28} {
		if got := phaseLabelChars(w); got != want {
			t.Errorf("phaseLabelChars(%v) = %d, want %d", w, got, want)
		}
	}
	var b strings.Builder
	drawPhases(&b, []PhaseSpan{{Name: "direct, KeyConcurrency=100", Start: 0, End: 10}, {Name: "faults", Start: 10, End: 100}}, func(s float64) float64 { return 10 * s }, 0, 100)
	if !strings.Contains(b.String(), ">direct, KeyCo…<") || !strings.Contains(b.String(), "<title>phase direct, KeyConcurrency=100:") {
		t.Errorf("phase marks %s", b.String())
	}
}
