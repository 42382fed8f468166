package batch

import "context"

// Key concurrency (WithKeyConcurrency): the records of each partition are split into key
// sequences, the records of one key in offset order, and each sequence runs as a unit of its
// own (see unit.go), so that everything a unit does (its record hooks, the sink, its answer
// at the deadline, its last guard) holds for it unchanged; at most n sequences run at once,
// each one record at a time, so at most n records are in flight. What the sequences report
// is gathered per partition: the partition is reported from the lowest offset that one of
// its sequences did not finish.

// keySet is the unitSet of a batch's key sequences, over the unitSet of its partitions.
type keySet struct {
	parts *unitSet
	part  []int   // sequence j's partition
	idx   [][]int // sequence j's records: their indexes in the partition, in offset order
	// stop is, for sequence j, the index in idx[j] of its first record reported, or
	// len(idx[j]): written by j's unit under its lock (or after the answer sealed it).
	stop []int
}

// newKeySet splits each of the n partitions of parts into key sequences by key(i, k), the key
// of record k of partition i (nil or empty for a record without a key: the keyless records of a
// partition are one sequence). The sequences are taken in turn across partitions, each
// partition's by its first record's offset, so that no partition waits behind another's
// keys; info(i, idx) describes a sequence to the group hooks.
func newKeySet(parts *unitSet, n int, key func(i, k int) []byte, info func(i int, idx []int) *GroupInfo) (*keySet, *unitSet) {
	ks := &keySet{parts: parts}
	perPart := make([][][]int, n)
	longest := 0
	for i := 0; i < n; i++ {
		seqs := map[string]int{}
		for k := 0; k < parts.len(i); k++ {
			name := key(i, k)
			j, ok := seqs[string(name)] // a lookup that does not copy the key
			if !ok {
				j = len(perPart[i])
				seqs[string(name)] = j
				perPart[i] = append(perPart[i], nil)
			}
			perPart[i][j] = append(perPart[i][j], k)
		}
		longest = max(longest, len(perPart[i]))
	}
	for r := 0; r < longest; r++ {
		for i := 0; i < n; i++ {
			if r < len(perPart[i]) {
				ks.part = append(ks.part, i)
				ks.idx = append(ks.idx, perPart[i][r])
			}
		}
	}
	ks.stop = make([]int, len(ks.idx))
	for j := range ks.stop {
		ks.stop[j] = len(ks.idx[j])
	}
	s := &unitSet{
		len:   func(j int) int { return len(ks.idx[j]) },
		item:  func(j, k int) Item { return parts.item(ks.part[j], ks.idx[j][k]) },
		group: func(j int) string { return parts.group(ks.part[j]) },
		info:  func(j int) *GroupInfo { return info(ks.part[j], ks.idx[j]) },
		do: func(ctx context.Context, j, k int, u *unit) *failure {
			return parts.do(ctx, ks.part[j], ks.idx[j][k], u)
		},
		report: func(j, k int) { ks.stop[j] = k },
		finish: func() int64 { return ks.finish(n) },
	}
	return ks, s
}

// finish reports each partition from its lowest record not done, and returns how many
// records that reports in all: Lambda resumes a partition from the lowest offset reported,
// and the records after it that succeeded come back with it, to be skipped through the
// idempotency store.
func (ks *keySet) finish(n int) (reported int64) {
	lowest := make([]int, n)
	for i := range lowest {
		lowest[i] = -1
	}
	for j, k := range ks.stop {
		if k >= len(ks.idx[j]) {
			continue
		}
		i, at := ks.part[j], ks.idx[j][k]
		if lowest[i] < 0 || at < lowest[i] {
			lowest[i] = at
		}
	}
	for i, at := range lowest {
		if at >= 0 {
			ks.parts.report(i, at)
			reported += int64(ks.parts.len(i) - at)
		}
	}
	return reported
}
