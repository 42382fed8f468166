// Package answercap caps the body of a schema registry's answer, which a registry client reads
// whole before it parses it: codec's Confluent registry and codec/glue's share it.
package answercap

import (
	"fmt"
	"io"
	"net/http"
)

// Max caps the body of a schema registry's answer: 4 MiB, well above the largest schema
// either registry keeps (Confluent stores schemas as records of a Kafka topic, 1 MB each by
// default; a Glue SchemaDefinition is at most 170,000 characters), so a registry, or whatever
// answers at its URL, cannot make the function read without end.
const Max = 4 << 20

// ErrTooLarge is the cause of a registry answer over Max.
var ErrTooLarge = fmt.Errorf("codec: the registry's answer is over %d bytes", Max)

// Transport caps the bodies of the responses of Base.
type Transport struct{ Base http.RoundTripper }

func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return Response(t.Base.RoundTrip(req))
}

// Response caps the body of resp, an answer from a registry, at Max.
func Response(resp *http.Response, err error) (*http.Response, error) {
	if err == nil {
		resp.Body = &body{rc: resp.Body, left: Max}
	}
	return resp, err
}

// body reads at most left bytes of rc, then fails with ErrTooLarge if there are more.
type body struct {
	rc   io.ReadCloser
	left int64
}

func (b *body) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells an answer of exactly the cap from one over it.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }
