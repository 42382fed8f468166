package filter

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The general path's answers, for the tests that check that the fast path (pass.go, scan.go)
// gives the same on every input; and the fast path's own, to check that it serves the
// documents it is for.

// GeneralMatch is Pattern.Match on the general path.
func (p *Pattern) GeneralMatch(doc []byte) (bool, error) { return p.matchGeneral(doc) }

// GeneralMatch is Criteria.Match on the general path.
func (c *Criteria) GeneralMatch(doc []byte) (bool, error) { return c.matchGeneral(doc) }

// GeneralWhich is Criteria.Which on the general path.
func (c *Criteria) GeneralWhich(doc []byte, dst []int) ([]int, error) {
	return c.whichGeneral(doc, dst)
}

// GeneralMatchKafka is Criteria.MatchKafka on the general path.
func (c *Criteria) GeneralMatchKafka(r *kafkaevent.Record) (bool, error) {
	if r.Err != nil {
		return false, fmt.Errorf("filter: the record cannot be matched: %w", r.Err)
	}
	return c.shapedGeneral("value", r.Value, r.Value == nil, nil)
}

// GeneralMatchSQS is Criteria.MatchSQS on the general path.
func (c *Criteria) GeneralMatchSQS(m *events.SQSMessage) (bool, error) {
	return c.shapedGeneral("body", []byte(m.Body), false, nil)
}

// FastWhich is Criteria.Which on the fast path alone: ok is false when it gives up (or the
// criteria have no plan), and the general path would answer.
func (c *Criteria) FastWhich(doc []byte, dst []int) (out []int, ok bool, err error) {
	if c.plan == nil {
		return dst, false, nil
	}
	return c.whichFast(doc, dst)
}

// FastMatchKafka is MatchKafka on the fast path alone, as FastWhich.
func (c *Criteria) FastMatchKafka(r *kafkaevent.Record) (match, ok bool, err error) {
	if c.plan == nil || r.Err != nil {
		return false, false, nil
	}
	return c.shapedFast("value", r.Value, r.Value == nil)
}
