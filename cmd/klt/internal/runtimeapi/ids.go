package runtimeapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/kafkalambda/toolkit/esm"
)

// newUUID returns a random (version 4) UUID, the form of Lambda's request ids.
func newUUID() string { return uuid.NewString() }

// randHex returns n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newTraceID returns an X-Ray trace header as Lambda sends it in Lambda-Runtime-Trace-Id:
// Root=1-<epoch seconds, 8 hex>-<24 hex>;Parent=<16 hex>;Sampled=0.
func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), randHex(12), randHex(8))
}

// maxErrorText bounds the errorType and errorMessage kept from an error body.
const maxErrorText = 64 * 1024

// parseErrorBody reads the body a runtime posts to /invocation/{id}/error or /init/error,
// {"errorMessage": "...", "errorType": "...", "stackTrace": [...]}, into an InvokeError.
// The type is the body's errorType, else header (Lambda-Runtime-Function-Error-Type), else
// "Unhandled", Lambda's type for an error the runtime did not name. A body that is not such
// an object is kept whole (as valid UTF-8, at most 64 KiB) as the message: the runtime's
// words are never dropped. [lambda-local.md §1, "Error reporting"]
func parseErrorBody(body []byte, header string) *esm.InvokeError {
	var e struct {
		ErrorMessage *string `json:"errorMessage"`
		ErrorType    *string `json:"errorType"`
	}
	out := &esm.InvokeError{}
	if err := json.Unmarshal(body, &e); err == nil && (e.ErrorMessage != nil || e.ErrorType != nil) {
		if e.ErrorType != nil {
			out.Type = *e.ErrorType
		}
		if e.ErrorMessage != nil {
			out.Message = *e.ErrorMessage
		}
	} else if len(body) > 0 {
		out.Message = string(body)
	}
	if out.Type == "" {
		out.Type = header
	}
	if out.Type == "" {
		out.Type = "Unhandled"
	}
	out.Type = clean(out.Type)
	out.Message = clean(out.Message)
	return out
}

// clean makes s valid UTF-8 of at most maxErrorText bytes.
func clean(s string) string {
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf("... [%d bytes cut]", len(s)-cut)
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
