package runtimeapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkInvoke measures an invocation round trip on a warm instance (runtimeapi), beside
// the floor of any HTTP emulator: one POST on loopback to an in-process echo server
// (loopback-http). A runtimeapi invocation is two HTTP exchanges (the /next answer, the
// response POST) plus the function's own work.
func BenchmarkInvoke(b *testing.B) {
	payload := []byte(`{"op":"echo","data":{"records":[1,2,3]}}`)
	b.Run("runtimeapi", func(b *testing.B) {
		p, _ := newPool(b, func(c *Config) { c.Logs = nil })
		ctx := context.Background()
		if _, err := p.Invoke(ctx, payload); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := p.Invoke(ctx, payload)
			if err != nil || resp.Err != nil {
				b.Fatal(err, resp.Err)
			}
		}
	})
	b.Run("loopback-http", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			_, _ = w.Write(body)
		}))
		defer srv.Close()
		client := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.Post(srv.URL, "application/json", bytes.NewReader(payload))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}
