// Package orders is the business side the samples share: the Order the orders topic carries,
// and the orders API that applying an order calls, the side effect each record must have
// exactly once.
//
// The API is an HTTP endpoint (ORDERS_API_URL) that takes an order as JSON, with the record's
// identity (topic-partition-offset) in the Idempotency-Key header, as payment and order APIs
// commonly accept. A 5xx or 429 answer, or no answer, is transient: the batch retries it. Any
// other 4xx is permanent: retrying will not help, so the record goes to the failure sink.
// Without ORDERS_API_URL an order is only logged.
package orders

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Order is what the orders topic carries.
type Order struct {
	OrderID  int64   `json:"orderId"`
	Customer string  `json:"customer"`
	Total    float64 `json:"total"`
	Currency string  `json:"currency"`
	Status   string  `json:"status,omitempty"`
}

// Decode reads the order in r's value. An order that cannot be read or is invalid will never
// succeed: the error is Permanent.
func Decode(r *kafkaevent.Record) (Order, error) {
	var o Order
	if err := json.Unmarshal(r.Value, &o); err != nil {
		return o, batch.Permanent(fmt.Errorf("order: %w", err))
	}
	if o.OrderID <= 0 || o.Total < 0 || o.Currency == "" {
		return o, batch.Permanent(fmt.Errorf("invalid order %d: total %v %q", o.OrderID, o.Total, o.Currency))
	}
	return o, nil
}

// API is the orders API's client; the zero API (no URL) applies nothing.
type API struct {
	url    string
	client *http.Client
}

// NewAPI returns the client of the API at url; url "" gives an API that applies nothing.
func NewAPI(url string) *API {
	// No client timeout: the handler's context carries the function's deadline (batch cancels
	// it before Lambda's timeout), and that is the bound that matters.
	return &API{url: url, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// Apply sends order o, read from record r, to the API. It is a no-op without a URL.
func (a *API) Apply(ctx context.Context, r *kafkaevent.Record, o Order) error {
	if a.url == "" {
		return nil
	}
	body, err := json.Marshal(o)
	if err != nil {
		return batch.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return batch.Permanent(fmt.Errorf("ORDERS_API_URL: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", r.Topic+"-"+strconv.Itoa(int(r.Partition))+"-"+strconv.FormatInt(r.Offset, 10))
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("orders API: %w", err) // transient: retried
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("orders API: %s after %v: %s", resp.Status, time.Since(start).Round(time.Millisecond), bytes.TrimSpace(msg))
	default:
		return batch.Permanent(fmt.Errorf("orders API refused order %d: %s: %s", o.OrderID, resp.Status, bytes.TrimSpace(msg)))
	}
}
