package capacity

import (
	"fmt"
	"math"
)

// The key-concurrent design is the direct design's function with batch.WithKeyConcurrency(n):
// within an invocation, records of different keys run at once, at most n in flight, and the
// records of one key one after another in offset order. A partition is still in one
// invocation at a time, so the design's concurrency and pollers are the direct design's; what
// changes is the invocation's time. For an invocation of b records whose handler takes d per
// record, drawn from a pool of k keys:
//
//	Db(b) = d × max(L(b), b / n)
//
// where L(b) is the expected longest same-key chain of the batch (its records of one key run
// one after another, so the batch lasts at least the chain) and b / n the records each of the
// n slots takes. The pool is the keys an invocation's records come from: the topic's Keys
// spread over its partitions, k = min(Keys, max(1, round(Keys × PartitionsPerInvocation /
// partitions))). The records in flight are at most min(n, b, D(b)), D(b) the expected
// distinct keys of the batch, and b / max(L(b), b / n) on average.
//
// Two ways a producer sends keys:
//
//   - drawn at random (the default), key i of the pool with probability q_i ∝ i^-s (Zipf's law
//     with exponent s = KeySkew; s = 0: every key alike, q_i = 1/k): D(b) = Σ 1 − (1 − q_i)^b
//     exactly (key i is in the batch unless all b draws miss it), and L(b) is the expected
//     largest of the multinomial counts, taken by Poissonisation (each key's count
//     Poisson(b × q_i), independent): P(L ≤ m) ≈ Π_i F(m; b × q_i), F the Poisson CDF, and
//     L(b) = Σ_{m ≥ 0} (1 − P(L ≤ m)), at least b / D(b) (the longest chain is no shorter than
//     the mean one) and at most b;
//   - in turn (KeysInTurn: key 0, 1, ... k−1, 0, 1 ... as klt local --generate sends them): b
//     consecutive records hold D(b) = min(b, k) keys and L(b) = ceil(b / k).
//
// A hot key is a long chain: at s = 1 over 200 keys the hottest key has 1 / H(200) = 17% of
// the records, so a batch of 100 holds about 17 of it, and its invocation lasts 17 records'
// time however large n is. The partitions are taken as evenly loaded, as in the other designs
// (a hot key's partition also receives more records than the others: the plan does not
// model that).

// maxKeys bounds Input.Keys: the key model keeps a probability per key of an invocation's
// pool, and a million keys is past the fan-out's message groups of any queue in practice.
const maxKeys = 1_000_000

// maxKeySkew bounds Input.KeySkew: at an exponent of 10 the hottest key holds 99.9% of the
// records; more says nothing new.
const maxKeySkew = 10

// designKC is the key-concurrent design's name.
const designKC = "key_concurrent"

// keyModel is the keys of one invocation's records: a pool of k keys, drawn at random (Zipf,
// exponent skew) or in turn; it computes D(b) and L(b), remembering each b it was asked.
type keyModel struct {
	pool   int
	skew   float64
	inTurn bool
	q      []float64 // the keys' probabilities, highest first (random draws)
	memo   map[float64][2]float64
}

func newKeyModel(pool int, skew float64, inTurn bool) *keyModel {
	k := &keyModel{pool: max(1, pool), skew: skew, inTurn: inTurn, memo: map[float64][2]float64{}}
	if !inTurn {
		k.q = make([]float64, k.pool)
		sum := 0.0
		for i := range k.q {
			k.q[i] = math.Pow(float64(i+1), -skew)
			sum += k.q[i]
		}
		for i := range k.q {
			k.q[i] /= sum
		}
	}
	return k
}

// hotShare is the hottest key's share of the pool's records.
func (k *keyModel) hotShare() float64 {
	if k.inTurn {
		return 1 / float64(k.pool)
	}
	return k.q[0]
}

// figures returns D(b) and L(b) for a batch of b records.
func (k *keyModel) figures(b float64) (distinct, longest float64) {
	if v, ok := k.memo[b]; ok {
		return v[0], v[1]
	}
	if k.inTurn {
		distinct = math.Min(b, float64(k.pool))
		longest = math.Max(1, math.Ceil(b/float64(k.pool)-1e-9))
	} else {
		for _, q := range k.q {
			distinct += -math.Expm1(b * math.Log1p(-q)) // 1 − (1 − q)^b, exact for small q
		}
		if k.pool == 1 {
			distinct = 1
		}
		longest = math.Min(b, math.Max(math.Min(1, b), math.Max(expectedMaxPoisson(k.q, b), b/distinct)))
	}
	k.memo[b] = [2]float64{distinct, longest}
	return distinct, longest
}

// expectedMaxPoisson is E[max_i N_i] for independent N_i ~ Poisson(b × q_i), q highest first:
// Σ_{m ≥ 0} (1 − Π_i F(m; b q_i)). Each key's CDF is carried from m to m + 1 in log space (a
// key with b q_i of thousands underflows exp(−b q_i)); a key whose CDF has reached 1 is
// dropped, and since q falls, those are the last ones. It stops when P(max > m) is below
// 1e-12 past the largest mean.
func expectedMaxPoisson(q []float64, b float64) float64 {
	n := len(q)
	logPMF := make([]float64, n)
	cdf := make([]float64, n)
	for i, qi := range q {
		logPMF[i] = -b * qi
		cdf[i] = math.Exp(logPMF[i])
	}
	active := n
	hi := b * q[0]
	e := 0.0
	for m := 0; float64(m) <= b+10*math.Sqrt(b)+40; m++ { // past it the Poisson tail is below 1e-20
		logAll := 0.0
		for i := 0; i < active; i++ {
			logAll += math.Log(math.Min(1, cdf[i]))
		}
		tail := -math.Expm1(logAll) // P(max > m)
		e += tail
		if tail < 1e-12 && float64(m) > hi {
			break
		}
		for i := 0; i < active; i++ {
			lam := b * q[i]
			logPMF[i] += math.Log(lam) - math.Log(float64(m+1))
			cdf[i] += math.Exp(logPMF[i])
		}
		// A key past its mean whose next probabilities are below 1e-17 has its CDF at 1 as
		// far as a float64 tells (its sum may stop a rounding short of 1: the test is on the
		// probability, not on 1 − CDF).
		for active > 1 && float64(m+1) > b*q[active-1] && logPMF[active-1] < -39 {
			cdf[active-1] = 1
			active--
		}
	}
	return e
}

// keyPool is the keys an invocation's records come from: the topic's keys over its
// partitions, times the partitions an invocation holds.
func keyPool(in *Input, partitions int) int {
	if partitions < 1 {
		partitions = 1
	}
	return min(in.Keys, max(1, int(math.Round(float64(in.Keys)*in.PartitionsPerInvocation/float64(partitions)))))
}

// keyConcurrent is the key-concurrent design: the direct design's function with
// batch.WithKeyConcurrency(in.KeyConcurrency). Its invocations are the shorter; its
// concurrency, pollers and partitions follow the direct design's rules. With the partitions
// not given, the pool depends on the partitions the rate needs, which depend on the pool: the
// plan takes a few rounds of the two, from the direct design's partitions.
func keyConcurrent(in *Input, directParts int) (Design, error) {
	parts := in.Partitions
	if parts == 0 {
		parts = max(1, directParts)
	}
	var s *kafkaStage
	var err error
	for round := 0; ; round++ {
		s, err = newKCStage(in, parts)
		if err != nil {
			return Design{}, err
		}
		if in.Partitions > 0 || round == 8 {
			break
		}
		n := s.needs(in.Rate)
		next := min(max(1, n.partitions), maxPartitions)
		if n.why != "" || next == parts {
			break
		}
		parts = next
	}
	d := designFrom(in, s, designKC)
	return d, nil
}

// newKCStage is the key-concurrent function's stage with the key pool of the partitions
// given, and the figures of the keys.
func newKCStage(in *Input, partitions int) (*kafkaStage, error) {
	pool := keyPool(in, partitions)
	km := newKeyModel(pool, in.KeySkew, in.KeysInTurn)
	field := "duration"
	if in.BatchDuration > 0 {
		field = "batch_duration"
	}
	kc := &kcTime{keys: km, n: in.KeyConcurrency}
	var pre figures
	draw := fmt.Sprintf("drawn at random, Zipf exponent %g", in.KeySkew)
	if in.KeysInTurn {
		draw = "sent in turn"
	}
	pre.add("function.keys_per_invocation", float64(pool), "keys",
		fmt.Sprintf("min(%d keys, max(1, round(%d keys × %.6g partitions per invocation / %d partitions))) = %d (%s)", in.Keys, in.Keys, in.PartitionsPerInvocation, partitions, pool, draw), srcKeyConcurrency)
	pre.add("function.hot_key_share", km.hotShare(), "of the records",
		hotFormula(km), srcKeyConcurrency)
	s, err := newKafkaStageTimed(in, "function", "ConsumerFunction", field, in.BatchSize, in.Duration, in.BatchDuration, kc, pre)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func hotFormula(k *keyModel) string {
	if k.inTurn {
		return fmt.Sprintf("1 / %d keys in turn", k.pool)
	}
	return fmt.Sprintf("1^-%g / Σ_{i=1..%d} i^-%g (Zipf)", k.skew, k.pool, k.skew)
}

// kcTime is an invocation's time under key concurrency, in records' time: max(L(b), b / n).
type kcTime struct {
	keys *keyModel
	n    int
}

// records is the sequential records' worth of an invocation of b records.
func (t *kcTime) records(b float64) float64 {
	_, l := t.keys.figures(b)
	return math.Max(l, b/float64(t.n))
}

// addFigures records the key figures of a full batch of b records.
func (t *kcTime) addFigures(f *figures, name string, b int) {
	d, l := t.keys.figures(float64(b))
	how := fmt.Sprintf("Σ_i 1 − (1 − q_i)^%d over %d keys (Zipf exponent %g)", b, t.keys.pool, t.keys.skew)
	lhow := fmt.Sprintf("Σ_{m≥0} (1 − Π_i F_Poisson(m; %d q_i)), at least %d / D and at most %d", b, b, b)
	if t.keys.inTurn {
		how = fmt.Sprintf("min(%d records, %d keys in turn)", b, t.keys.pool)
		lhow = fmt.Sprintf("ceil(%d records / %d keys in turn)", b, t.keys.pool)
	}
	f.add(name+".distinct_keys_per_batch", d, "keys", how+fmt.Sprintf(" = %.6g", d), srcKeyConcurrency)
	f.add(name+".longest_key_chain", l, "records", lhow+fmt.Sprintf(" = %.6g", l), srcKeyConcurrency)
	inflight := math.Min(float64(t.n), math.Min(float64(b), d))
	f.add(name+".records_in_flight_max", inflight, "records",
		fmt.Sprintf("min(key_concurrency %d, batch %d, distinct keys %.6g) = %.6g", t.n, b, d, inflight), srcKeyConcurrency)
	seq := t.records(float64(b))
	f.add(name+".records_in_flight_mean", float64(b)/seq, "records",
		fmt.Sprintf("%d records / max(L %.6g, %d / %d) = %.6g", b, l, b, t.n, float64(b)/seq), srcKeyConcurrency)
}
