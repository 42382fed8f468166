// Package idempotencytest provides utilities for testing code that uses package idempotency,
// as net/http/httptest does for HTTP: [Store], an in-memory idempotency.Store for unit
// tests that need no DynamoDB, and [TestStore], the conformance suite every
// idempotency.Store must pass.
//
// A unit test hands the in-memory store to the code under test in place of the DynamoDB
// store, and reads what was stored:
//
//	store := idempotencytest.NewStore()
//	err := process(ctx, store, event) // calls idempotency.Do(ctx, store, ...)
//	for _, r := range store.Records() { ... }
//
// The store decides liveness by the time Do gives it, so a test moves past an expiry or a
// lease with idempotency.WithClock instead of waiting.
package idempotencytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/idempotency"
)

// Store is an idempotency.Store in memory, with the semantics of the DynamoDB store: Acquire
// writes unless a live record exists (a completed one until its expiration second has
// passed, an in-progress one until its lease's last millisecond has passed), Release deletes
// only the caller's own in-progress record. It is safe for concurrent use. Records live as
// long as the Store: each execution environment of a Lambda function would have its own, so
// functions use idempotency.NewDynamoDBStore.
type Store struct {
	format  idempotency.Format
	mu      sync.Mutex
	records map[string]idempotency.Record
	err     error
}

// Option configures a Store.
type Option func(*Store)

// WithFormat sets the Format the store reports, which decides how Do hashes keys, so that
// tests see the IDs a DynamoDB store of that format would hold. The default is
// idempotency.FormatPython.
func WithFormat(f idempotency.Format) Option {
	return func(s *Store) {
		if f != idempotency.FormatPython && f != idempotency.FormatTypeScript {
			if s.err == nil {
				s.err = fmt.Errorf("%w: idempotencytest.WithFormat(%v): want FormatPython or FormatTypeScript", idempotency.ErrInvalidOption, f)
			}
			return
		}
		s.format = f
	}
}

// NewStore returns an empty in-memory store. An invalid option makes every call of the
// store fail with idempotency.ErrInvalidOption.
func NewStore(opts ...Option) *Store {
	s := &Store{records: map[string]idempotency.Record{}}
	for _, o := range opts {
		if o == nil {
			if s.err == nil {
				s.err = fmt.Errorf("%w: nil idempotencytest.Option", idempotency.ErrInvalidOption)
			}
			continue
		}
		o(s)
	}
	return s
}

// live reports whether r holds its ID at now, by the DynamoDB store's condition.
func live(r *idempotency.Record, now time.Time) bool {
	if !r.Expiration.IsZero() && now.Unix() > r.Expiration.Unix() {
		return false
	}
	if r.Status == idempotency.StatusInProgress && !r.InProgressExpiration.IsZero() {
		return now.UnixMilli() <= r.InProgressExpiration.UnixMilli()
	}
	return true
}

// Acquire implements idempotency.Store.
func (s *Store) Acquire(_ context.Context, r *idempotency.Record, now time.Time) (*idempotency.Record, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[r.ID]; ok && live(&old, now) {
		return &old, idempotency.ErrExists
	}
	s.records[r.ID] = stored(r)
	return nil, nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(_ context.Context, r *idempotency.Record) error {
	if s.err != nil {
		return s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[r.ID] = stored(r)
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(_ context.Context, r *idempotency.Record) error {
	if s.err != nil {
		return s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[r.ID]; ok && old.Status == idempotency.StatusInProgress &&
		old.InProgressExpiration.UnixMilli() == r.InProgressExpiration.UnixMilli() {
		delete(s.records, r.ID)
	}
	return nil
}

// Format implements idempotency.Store.
func (s *Store) Format() idempotency.Format { return s.format }

// stored is r as a store keeps it: times to the second and the millisecond.
func stored(r *idempotency.Record) idempotency.Record {
	c := *r
	if !c.Expiration.IsZero() {
		c.Expiration = time.Unix(c.Expiration.Unix(), 0)
	}
	if !c.InProgressExpiration.IsZero() {
		c.InProgressExpiration = time.UnixMilli(c.InProgressExpiration.UnixMilli())
	}
	return c
}

// Records returns the stored records, expired ones included, sorted by ID.
func (s *Store) Records() []idempotency.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]idempotency.Record, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b idempotency.Record) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Record returns the record stored under id, expired or not.
func (s *Store) Record(id string) (idempotency.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[id]
	return r, ok
}
