// Command probe-xraytrace starts as a function importing batch and xraytrace would, and prints
// what its package initialisation left on http.DefaultServeMux.
package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/xraytrace"
)

func main() {
	_ = batch.KafkaHandler(func(context.Context, *kafkaevent.Record) error { return nil }, batch.WithHooks(xraytrace.New()))
	for _, path := range []string{"/debug/requests", "/debug/events"} {
		_, pattern := http.DefaultServeMux.Handler(&http.Request{Method: "GET", Host: "localhost", URL: &url.URL{Path: path}})
		fmt.Printf("%s: %q\n", path, pattern)
	}
}
