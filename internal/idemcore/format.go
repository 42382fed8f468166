package idemcore

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
)

// Format is documented as idempotency.Format, the name users see.
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
		return "", fmt.Errorf("%w: unknown entry format %v", ErrInvalidOption, f)
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
