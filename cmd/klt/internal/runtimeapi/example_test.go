package runtimeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// A pool of a function built with aws-lambda-go (bootstrap is testdata/fn, built by
// TestMain): a function error comes back as Response.Err, an answer as Response.Payload, both
// from the same warm process.
func ExamplePool_Invoke() {
	pool, err := Start(Config{
		Name:      "echo",
		Bootstrap: bootstrap,
		Env:       []string{"PATH=/usr/bin:/bin"},
		Timeout:   3 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	ctx := context.Background()

	resp, err := pool.Invoke(ctx, []byte(`{"op":"error","msg":"bad record"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Err)

	resp, err = pool.Invoke(ctx, []byte(`{"op":"echo","data":{"hello":"world"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var answer struct{ Data json.RawMessage }
	if err := json.Unmarshal(resp.Payload, &answer); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(answer.Data))
	total, busy := pool.Instances()
	fmt.Println(total, "instance,", busy, "busy")
	// Output:
	// errorString: bad record
	// {"hello":"world"}
	// 1 instance, 0 busy
}
