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
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/idempotency"
)

// Store is an idempotency.Store in memory, with the semantics of the DynamoDB store: Acquire
// writes unless a live record of another owner exists (a completed one until its expiration
// second has passed, an in-progress one until its lease's last millisecond has passed,
// whatever its expiration), Complete, Release and Renew act only on the caller's own record (the
// same Owner), and a call under a context that has ended fails with the context's error. It is safe for concurrent use. Records live as
// long as the Store: each execution environment of a Lambda function would have its own, so
// functions use the DynamoDB store (package idempotency/dynamodb).
type Store struct {
	format  idempotency.Format
	mu      sync.Mutex
	records map[string]idempotency.Entry
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
				s.err = &toolkit.OptionError{Package: "idempotency/idempotencytest", Option: "WithFormat", Reason: fmt.Sprintf("%v: want FormatPython or FormatTypeScript", f)}
			}
			return
		}
		s.format = f
	}
}

// NewStore returns an empty in-memory store. An invalid option makes every call of the
// store fail with a *toolkit.OptionError (matching toolkit.ErrInvalidOption).
func NewStore(opts ...Option) *Store {
	s := &Store{records: map[string]idempotency.Entry{}}
	for _, o := range opts {
		if o == nil {
			if s.err == nil {
				s.err = &toolkit.OptionError{Package: "idempotency/idempotencytest", Option: "Option", Reason: "nil: want an option"}
			}
			continue
		}
		o(s)
	}
	return s
}

// live reports whether r holds its ID at now, by the DynamoDB store's condition: an
// in-progress record with a lease until the lease's last millisecond, whatever its
// expiration; any other until its expiration second has passed.
func live(r *idempotency.Entry, now time.Time) bool {
	if r.Status == idempotency.StatusInProgress && !r.InProgressExpiration.IsZero() {
		return now.UnixMilli() <= r.InProgressExpiration.UnixMilli()
	}
	return r.Expiration.IsZero() || now.Unix() <= r.Expiration.Unix()
}

// errNotOwner is Complete's error for a record that is no longer the caller's.
var errNotOwner = errors.New("idempotencytest: the record is no longer this call's (its lease ended, and another caller took it over or it was released)")

// Acquire implements idempotency.Store.
func (s *Store) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[r.ID]; ok && live(&old, now) && (r.Owner == "" || old.Owner != r.Owner) {
		return &old, idempotency.ErrExists
	}
	s.records[r.ID] = stored(r)
	return nil, nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, r *idempotency.Entry) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[r.ID]; !ok || old.Owner != r.Owner {
		return errNotOwner
	}
	s.records[r.ID] = stored(r)
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, r *idempotency.Entry) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[r.ID]
	if ok && old.Status == idempotency.StatusInProgress && old.Owner == r.Owner &&
		(r.Owner != "" || old.InProgressExpiration.UnixMilli() == r.InProgressExpiration.UnixMilli()) {
		delete(s.records, r.ID)
	}
	return nil
}

// Renew implements idempotency.Store.
func (s *Store) Renew(ctx context.Context, r *idempotency.Entry) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if r.Owner == "" || r.Status != idempotency.StatusInProgress {
		return &toolkit.OptionError{Package: "idempotency/idempotencytest", Option: "Renew", Reason: "an entry without an owner, or not in progress"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[r.ID]
	if !ok || old.Status != idempotency.StatusInProgress || old.Owner != r.Owner {
		return fmt.Errorf("%w: idempotencytest: the record is completed, another caller's, or gone", idempotency.ErrLeaseLost)
	}
	s.records[r.ID] = stored(r)
	return nil
}

// check returns the error of a call that cannot be made: an invalid option, or a context
// that has ended, as a network call would fail.
func (s *Store) check(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	return ctx.Err()
}

// Format implements idempotency.Store.
func (s *Store) Format() idempotency.Format { return s.format }

// stored is r as a store keeps it: times to the second and the millisecond.
func stored(r *idempotency.Entry) idempotency.Entry {
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
func (s *Store) Records() []idempotency.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]idempotency.Entry, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b idempotency.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Entry returns the entry stored under id, expired or not.
func (s *Store) Entry(id string) (idempotency.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[id]
	return r, ok
}
