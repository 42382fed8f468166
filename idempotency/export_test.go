package idempotency

import "github.com/kafkalambda/toolkit/internal/idemcore"

// Test hooks for the external tests (package idempotency_test).

// MaxData is the largest result, in bytes of JSON, that Do stores.
const MaxData = idemcore.MaxData

// KeyID returns the stored ID Do writes for key in format under opts (WithKeyPrefix,
// WithHash).
var KeyID = idemcore.KeyID

// JSJSON is the text FormatTypeScript hashes for v.
var JSJSON = idemcore.JSJSON

// JSNumber formats a number as JavaScript's Number.prototype.toString.
var JSNumber = idemcore.JSNumber

// Settle waits up to d for the completions Do could not store before it returned, retried
// since on store, to be stored or given up; it reports whether they were.
var Settle = idemcore.Settle
