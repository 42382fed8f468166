package codec

import (
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/glue"
)

// maxRegistryAnswer caps the body of a schema registry's answer, which is read whole before
// it is parsed: 4 MiB, well above the largest schema either registry keeps (Confluent stores
// schemas as records of a Kafka topic, 1 MB each by default; a Glue SchemaDefinition is at
// most 170,000 characters), so a registry, or whatever answers at its URL, cannot make the
// function read without end.
const maxRegistryAnswer = 4 << 20

// errAnswerTooLarge is the cause of a registry answer over maxRegistryAnswer.
var errAnswerTooLarge = fmt.Errorf("codec: the registry's answer is over %d bytes", maxRegistryAnswer)

// capTransport caps the bodies of the responses of a Confluent registry's HTTP client.
type capTransport struct{ base http.RoundTripper }

func (t capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return capAnswer(t.base.RoundTrip(req))
}

// capClient caps the bodies of the responses of the Glue client, for one call.
type capClient struct{ base glue.HTTPClient }

func (c capClient) Do(req *http.Request) (*http.Response, error) { return capAnswer(c.base.Do(req)) }

// capAnswer caps the body of resp, an answer from either registry, at maxRegistryAnswer.
func capAnswer(resp *http.Response, err error) (*http.Response, error) {
	if err == nil {
		resp.Body = &capBody{rc: resp.Body, left: maxRegistryAnswer}
	}
	return resp, err
}

// capGlueAnswer is the option of a GetSchemaVersion call that caps its response.
func capGlueAnswer(o *glue.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = capClient{o.HTTPClient}
	}
}

// capBody reads at most left bytes of rc, then fails with errAnswerTooLarge if there are
// more.
type capBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *capBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells an answer of exactly the cap from one over it.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errAnswerTooLarge
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

func (b *capBody) Close() error { return b.rc.Close() }
