package idempotency

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
)

// Format is the entry layout of one Powertools edition: how the stored ID and the payload's
// validation hash are computed from a key and a payload, and how a result is stored. A Store
// has one format (dynamodb.WithFormat for the DynamoDB store), and Do hashes keys the store's
// way, so that a Go function and a Powertools function of that edition, with the same key
// prefix and the same key, share an entry: each replays what the other stored and waits while
// the other runs. It belongs to the engine because Do computes the IDs; the store keeps the
// rest of the layout (the data attribute, the lease of completed entries).
//
// The attributes (id, expiration, in_progress_expiration, status, data, validation), the
// statuses (INPROGRESS, COMPLETED), the write condition and the hash function (MD5) are the
// same in both editions. What differs:
//
//	                     FormatPython (default)          FormatTypeScript
//	hashed text          json.dumps(v, sort_keys=True)   JSON.stringify(deepSort(v))
//	digest encoding      hex                             base64 (standard, padded)
//	data attribute       the result as a JSON string (S) the result as a DynamoDB value (M, L, S, N, BOOL, NULL)
//	completed entries    in_progress_expiration dropped  in_progress_expiration kept
//
// So the key "orders-0-42" under the prefix "fn" is stored as
// "fn#" + hex(md5(`"orders-0-42"`)) by Python and "fn#" + base64(md5(`"orders-0-42"`)) by
// TypeScript; the hashed texts differ for non-ASCII text (Python escapes it), numbers
// (Python keeps 1.0, JavaScript writes 1) and object keys (Python sorts by code point,
// TypeScript ignoring case).
type Format int

// The formats.
const (
	// FormatPython is the layout of Powertools for AWS Lambda (Python).
	FormatPython Format = iota
	// FormatTypeScript is the layout of Powertools for AWS Lambda (TypeScript), package
	// @aws-lambda-powertools/idempotency, checked against version 2.35.0.
	FormatTypeScript
)

// String returns "python" or "typescript".
func (f Format) String() string {
	switch f {
	case FormatPython:
		return "python"
	case FormatTypeScript:
		return "typescript"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

func (f Format) valid() bool { return f == FormatPython || f == FormatTypeScript }

// Digest returns what the edition's entry for key holds after "<prefix>#" in its ID, with the
// default hash (MD5; see WithHash): the digest of the key's serialized text, hex for Python,
// base64 for TypeScript. A tool that reads a table of entries (klt local) uses it to tell
// which key an entry is for.
func (f Format) Digest(key string) (string, error) { return f.hash(md5.New, key) }

// hash returns the edition's hash of v: the digest of its serialized text, hex for Python and
// base64 for TypeScript.
func (f Format) hash(newHash func() hash.Hash, v any) (string, error) {
	var text []byte
	var err error
	switch f {
	case FormatPython:
		text, err = pythonJSON(v)
	case FormatTypeScript:
		text, err = jsJSON(v)
	default:
		return "", optionError("Format", fmt.Sprintf("unknown entry format %v", f))
	}
	if err != nil {
		return "", err
	}
	h := newHash()
	h.Write(text)
	sum := h.Sum(nil)
	if f == FormatTypeScript {
		return base64.StdEncoding.EncodeToString(sum), nil
	}
	return hex.EncodeToString(sum), nil
}
