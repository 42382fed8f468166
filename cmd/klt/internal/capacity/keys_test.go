package capacity

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// talk is the talk's example with key concurrency: 5 partitions, 300 ms per record, batches
// of 100, 1,000 keys.
func talk(rate float64, n int) Input {
	return Input{Rate: rate, Partitions: 5, Duration: ms(300), BatchSize: 100, Keys: 1_000, KeyConcurrency: n}
}

// TestKeyConcurrentTalkExample: the talk's example reaches at least 30x the direct design with
// key concurrency and no queue. By hand: an invocation draws from 1,000 / 5 = 200 keys, each
// 1/200 of the records. A batch of 100 holds D = 200 × (1 − (1 − 1/200)^100) = 200 × (1 −
// 0.60577) = 78.85 distinct keys. Each key's count is about Poisson(100/200 = 0.5): F(2; 0.5)
// = e^-0.5 × (1 + 0.5 + 0.125) = 0.98561, F(3) = 0.99825, F(4) = 0.999827, F(5) = 0.9999857,
// so P(L ≥ 3) = 1 − 0.98561^200 = 0.9449, P(L ≥ 4) = 1 − 0.99825^200 = 0.2955, P(L ≥ 5) =
// 0.0339, P(L ≥ 6) = 0.0029, and L = 1 + 1 + 0.9449 + 0.2955 + 0.0339 + 0.0029 + 0.0002 =
// 3.2774 records. With n = 100 ≥ D the invocation lasts 0.3 s × 3.2774 = 0.98323 s, and 5
// partitions reach 5 × 100 / 0.98323 = 508.5 records/s: 30.5 × the direct design's 16.667.
func TestKeyConcurrentTalkExample(t *testing.T) {
	p := mustMake(t, talk(500, 100))
	kc := p.KeyConcurrent
	if kc == nil {
		t.Fatal("no key-concurrent design with key_concurrency 100")
	}
	if v := figure(t, *kc, "function.keys_per_invocation"); v != 200 {
		t.Errorf("keys per invocation = %v, want 1,000 / 5 = 200", v)
	}
	if v := figure(t, *kc, "function.distinct_keys_per_batch"); math.Abs(v-78.846) > 0.001 {
		t.Errorf("distinct keys = %v, want 78.846", v)
	}
	if v := figure(t, *kc, "function.longest_key_chain"); math.Abs(v-3.2774) > 0.001 {
		t.Errorf("longest chain = %v, want 3.2774", v)
	}
	if v := figure(t, *kc, "function.invocation_seconds"); math.Abs(v-0.98323) > 0.0005 {
		t.Errorf("invocation = %v s, want 0.98323", v)
	}
	if math.Abs(kc.MaxRecordsPerSecond-508.5) > 0.5 {
		t.Errorf("max = %v records/s, want 508.5", kc.MaxRecordsPerSecond)
	}
	if x := kc.MaxRecordsPerSecond / p.Direct.MaxRecordsPerSecond; x < 30 {
		t.Errorf("key concurrency reaches %.1fx the direct design, want at least 30x", x)
	}
	if !kc.ReachesTarget || p.Direct.ReachesTarget || p.Cheaper != designKC {
		t.Errorf("at 500 records/s: key-concurrent reaches %v, direct %v, cheaper %q; want true, false, key_concurrent", kc.ReachesTarget, p.Direct.ReachesTarget, p.Cheaper)
	}
	// The queue is what the fan-out pays and the key-concurrent design does not.
	for _, l := range kc.CostLines {
		if strings.HasPrefix(l.Item, "SQS") || strings.Contains(l.Item, "Worker") || strings.Contains(l.Item, "Dispatcher") {
			t.Errorf("key-concurrent cost line %q: one function, no queue", l.Item)
		}
	}
	if *kc.MonthlyCostUSD >= *p.Fanout.MonthlyCostUSD {
		t.Errorf("key-concurrent $%.2f, fan-out $%.2f: want the key-concurrent design cheaper (no queue, no second function)", *kc.MonthlyCostUSD, *p.Fanout.MonthlyCostUSD)
	}
}

// TestKeyConcurrencyBoundsInFlight: with n = 10 the 100 records of a batch take at least 100 /
// 10 = 10 records' time, longer than the chain of 3.28: 0.3 s × 10 = 3 s an invocation, 5 ×
// 100 / 3 = 166.7 records/s, 10x direct. n = 1 is the direct design: 30 s, 16.667.
func TestKeyConcurrencyBoundsInFlight(t *testing.T) {
	for _, c := range []struct {
		n       int
		seconds float64
	}{{10, 3}, {1, 30}, {100, 0.98323}, {1_000, 0.98323}} {
		p := mustMake(t, talk(10, c.n))
		if v := figure(t, *p.KeyConcurrent, "function.invocation_seconds"); math.Abs(v-c.seconds) > 0.0005 {
			t.Errorf("n = %d: invocation %v s, want %v", c.n, v, c.seconds)
		}
		if want := 5 * 100 / c.seconds; math.Abs(p.KeyConcurrent.MaxRecordsPerSecond-want) > 0.5 {
			t.Errorf("n = %d: max %v records/s, want %v", c.n, p.KeyConcurrent.MaxRecordsPerSecond, want)
		}
	}
}

// TestKeysInTurn: keys sent in turn (klt local --generate): 100 consecutive records of 200
// keys are 100 keys once each, so the chain is 1 record and the invocation 0.3 s: 5 × 100 /
// 0.3 = 1,666.7 records/s, 100x direct. Of 50 keys (250 keys over 5 partitions): ceil(100 /
// 50) = 2 records, 0.6 s, 833.3 records/s.
func TestKeysInTurn(t *testing.T) {
	in := talk(500, 100)
	in.KeysInTurn = true
	p := mustMake(t, in)
	if v := figure(t, *p.KeyConcurrent, "function.longest_key_chain"); v != 1 {
		t.Errorf("chain = %v, want 1", v)
	}
	if !near(p.KeyConcurrent.MaxRecordsPerSecond, 5*100/0.3) {
		t.Errorf("max = %v, want 1,666.7", p.KeyConcurrent.MaxRecordsPerSecond)
	}
	in.Keys = 250
	p = mustMake(t, in)
	if v := figure(t, *p.KeyConcurrent, "function.longest_key_chain"); v != 2 {
		t.Errorf("250 keys: chain = %v, want ceil(100 / 50) = 2", v)
	}
	if !near(p.KeyConcurrent.MaxRecordsPerSecond, 5*100/0.6) {
		t.Errorf("250 keys: max = %v, want 833.3", p.KeyConcurrent.MaxRecordsPerSecond)
	}
}

// TestHotKey: at Zipf exponent 1 over 200 keys the hottest key has 1 / H(200) = 1 / 5.878 =
// 17.0% of the records, so a batch of 100 holds about 17 of it, and the invocation lasts at
// least 17 records' time however large n is: 5 × 100 / (17 × 0.3 s) = 98 records/s at most,
// a fifth of the uniform keys' 508.
func TestHotKey(t *testing.T) {
	in := talk(50, 1_000)
	in.KeySkew = 1
	p := mustMake(t, in)
	kc := *p.KeyConcurrent
	h := 0.0
	for i := 1; i <= 200; i++ {
		h += 1 / float64(i)
	}
	if v := figure(t, kc, "function.hot_key_share"); !near(v, 1/h) || math.Abs(v-0.1701) > 0.0001 {
		t.Errorf("hot key share = %v, want 1 / H(200) = %v", v, 1/h)
	}
	l := figure(t, kc, "function.longest_key_chain")
	if mean := 100 / h; l < mean || l > mean+3*math.Sqrt(mean) {
		t.Errorf("chain = %v, want at least the hot key's mean %.2f and within 3 deviations of it", l, mean)
	}
	if kc.MaxRecordsPerSecond > 5*100/(0.3*100/h) {
		t.Errorf("max = %v records/s, over the hot key's bound %v", kc.MaxRecordsPerSecond, 5*100/(0.3*100/h))
	}
}

// TestKeyConcurrentCost: the cost lines of the key-concurrent design are the direct design's
// but for the duration, which is the shorter invocations'. At 15 records/s with keys in turn
// (so that the chain is exact): one poller, a window of 0.5 s, so 15 × 0.5 = 7.5 records an
// invocation, 2 invocations a second, 5,184,000 a month ($1.0368); direct: 7.5 × 0.3 = 2.25 s
// each, 5.184e6 × 2.25 × 256 / 1024 = 2,916,000 GB-s = $38.88; key-concurrent: ceil(7.5 /
// 200) = 1 record's time, 0.3 s, 388,800 GB-s = $5.184. Both: 1 EPU, 720 hours × $0.185 =
// $133.20, and 15 × 2 writes × 2,592,000 = 77.76 million units × $0.625 = $48.60.
func TestKeyConcurrentCost(t *testing.T) {
	in := talk(15, 100)
	in.KeysInTurn = true
	p := mustMake(t, in)
	want := map[string]float64{
		"Lambda requests (ConsumerFunction)":                    1.0368,
		"Lambda duration (ConsumerFunction, arm64)":             388_800 * 0.0000133334,
		"Event poller units (ConsumerFunction's Kafka mapping)": 133.2,
		"DynamoDB writes (idempotency, ConsumerFunction)":       48.6,
	}
	got := map[string]float64{}
	for _, l := range p.KeyConcurrent.CostLines {
		got[l.Item] = l.MonthlyUSD
	}
	for item, usd := range want {
		if math.Abs(got[item]-usd) > 1e-6 {
			t.Errorf("%s: $%v, want $%v", item, got[item], usd)
		}
	}
	if len(got) != len(want) {
		t.Errorf("cost lines %v, want %v", got, want)
	}
	for _, l := range p.Direct.CostLines {
		if l.Item == "Lambda duration (ConsumerFunction, arm64)" && math.Abs(l.MonthlyUSD-2_916_000*0.0000133334) > 1e-6 {
			t.Errorf("direct duration $%v, want $38.88", l.MonthlyUSD)
		}
	}
	if total := 1.0368 + 388_800*0.0000133334 + 133.2 + 48.6; math.Abs(*p.KeyConcurrent.MonthlyCostUSD-total) > 1e-6 {
		t.Errorf("monthly $%v, want $%v", *p.KeyConcurrent.MonthlyCostUSD, total)
	}
	if p.Cheaper != designKC {
		t.Errorf("cheaper = %q, want key_concurrent (direct $%.2f)", p.Cheaper, *p.Direct.MonthlyCostUSD)
	}
}

// TestExpectedMaxPoisson checks the series against figures known in closed form: one key's
// count is Poisson(b), whose mean is b (even at b = 10,000, where e^-b underflows); two keys
// of Poisson(1): P(max ≤ m) = F(m; 1)^2, so E = Σ 1 − F(m)^2 = 0.8647 + 0.4587 + 0.1541 +
// 0.0376 + 0.0073 + 0.0012 + ... = 1.5238.
func TestExpectedMaxPoisson(t *testing.T) {
	for _, b := range []float64{0.5, 5, 10_000} {
		if v := expectedMaxPoisson([]float64{1}, b); math.Abs(v-b) > 1e-6*b {
			t.Errorf("one key, b = %v: E[max] = %v, want %v", b, v, b)
		}
	}
	e, f, pmf := 0.0, 0.0, math.Exp(-1)
	for m := 0; m < 40; m++ {
		f += pmf
		e += 1 - f*f
		pmf /= float64(m + 1)
	}
	if v := expectedMaxPoisson([]float64{0.5, 0.5}, 2); math.Abs(v-e) > 1e-9 || math.Abs(v-1.5238) > 1e-4 {
		t.Errorf("two keys of Poisson(1): E[max] = %v, want %v", v, e)
	}
	// A batch of one record has a chain of one, whatever the keys.
	if _, l := newKeyModel(200, 0, false).figures(1); l != 1 {
		t.Errorf("one record: chain %v, want 1", l)
	}
}

// TestManyKeysBounded: a million keys on one partition, batches of 10,000 records at Zipf
// exponent 1, is planned in well under a second.
func TestManyKeysBounded(t *testing.T) {
	start := time.Now()
	in := Input{Rate: 100, Partitions: 1, Duration: ms(1), BatchSize: 10_000, RecordSize: 100, Keys: maxKeys, KeyConcurrency: 10_000, KeySkew: 1}
	p := mustMake(t, in)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("planned in %v", took)
	}
	if l := figure(t, *p.KeyConcurrent, "function.longest_key_chain"); l < 10_000*figure(t, *p.KeyConcurrent, "function.hot_key_share") {
		t.Errorf("chain %v below the hot key's mean", l)
	}
}

// TestKeyInputs: the key inputs are checked before use.
func TestKeyInputs(t *testing.T) {
	for _, c := range []struct {
		field string
		in    func(*Input)
	}{
		{"key_concurrency", func(in *Input) { in.KeyConcurrency = -1 }},
		{"key_concurrency", func(in *Input) { in.KeyConcurrency = 10_001 }},
		{"keys", func(in *Input) { in.Keys = maxKeys + 1 }},
		{"key_skew", func(in *Input) { in.KeySkew = math.NaN() }},
		{"key_skew", func(in *Input) { in.KeySkew = -1 }},
		{"key_skew", func(in *Input) { in.KeySkew = 11 }},
		{"key_skew", func(in *Input) { in.KeySkew, in.KeysInTurn = 1, true }},
		{"key_skew", func(in *Input) { in.KeySkew, in.KeyConcurrency = 1, 0 }},
		{"keys_in_turn", func(in *Input) { in.KeysInTurn, in.KeyConcurrency = true, 0 }},
	} {
		in := talk(10, 100)
		c.in(&in)
		_, err := Make(in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInput) {
			t.Errorf("%+v: err %v, want a FieldError of %s", in, err, c.field)
		}
	}
	// Without key_concurrency the plan has no key-concurrent design, and the fan-out's
	// message groups are the keys.
	p := mustMake(t, Input{Rate: 10, Duration: ms(300), Keys: 40})
	if p.KeyConcurrent != nil || p.Input.Fanout.MessageGroups != 40 {
		t.Errorf("key-concurrent %v, message groups %d; want none and 40", p.KeyConcurrent, p.Input.Fanout.MessageGroups)
	}
}
