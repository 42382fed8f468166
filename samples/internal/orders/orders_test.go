package orders

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		value     string
		permanent bool
	}{
		{`{"orderId":7,"customer":"c-1","total":12.5,"currency":"EUR"}`, false},
		{`{"orderId":7,"customer":"c-1","total":12.5}`, true},
		{`{"orderId":0,"total":1,"currency":"EUR"}`, true},
		{`{"orderId":7,"total":-1,"currency":"EUR"}`, true},
		{`not json`, true},
	} {
		_, err := Decode(&kafkaevent.Record{Value: []byte(tc.value)})
		if (err != nil) != tc.permanent || err != nil && !batch.IsPermanent(err) {
			t.Errorf("Decode(%s): %v, want permanent error %v", tc.value, err, tc.permanent)
		}
	}
}

func TestApply(t *testing.T) {
	var gotKey, gotBody string
	status := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("Idempotency-Key")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.WriteHeader(status)
		io.WriteString(w, "because\n")
	}))
	defer srv.Close()
	api := NewAPI(srv.URL)
	r := &kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 42}
	o := Order{OrderID: 9, Customer: "c-9", Total: 3, Currency: "USD"}
	ctx := context.Background()

	if err := api.Apply(ctx, r, o); err != nil {
		t.Fatal(err)
	}
	if gotKey != "orders-3-42" || !strings.Contains(gotBody, `"orderId":9`) {
		t.Errorf("request: key %q body %s", gotKey, gotBody)
	}
	for _, tc := range []struct {
		status    int
		permanent bool
	}{{503, false}, {500, false}, {429, false}, {400, true}, {409, true}} {
		status = tc.status
		err := api.Apply(ctx, r, o)
		if err == nil || batch.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), "because") {
			t.Errorf("status %d: %v, want permanent=%v with the API's message", tc.status, err, tc.permanent)
		}
	}
	srv.Close()
	if err := api.Apply(ctx, r, o); err == nil || batch.IsPermanent(err) {
		t.Errorf("API down: %v, want a transient error", err)
	}
	if err := NewAPI("").Apply(ctx, r, o); err != nil {
		t.Errorf("no URL: %v", err)
	}
}
