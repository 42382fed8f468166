// Command fn is the function runtimeapi's tests run: built with aws-lambda-go, its behaviour
// depends on the event's "op". Every success answer carries the process id, so that a test
// can tell instances apart.
//
// FN_INIT in the environment changes start-up: "hang" never starts the runtime loop, "error"
// reports an init error through the Runtime API and exits, "exit" exits with status 4.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Op    string          `json:"op"`
	Data  json.RawMessage `json:"data,omitempty"`
	Ms    int             `json:"ms,omitempty"`
	N     int             `json:"n,omitempty"`
	Msg   string          `json:"msg,omitempty"`
	Width int             `json:"width,omitempty"`
}

type answer struct {
	Pid        int             `json:"pid"`
	Data       json.RawMessage `json:"data,omitempty"`
	DeadlineMs int64           `json:"deadline_ms,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	ARN        string          `json:"arn,omitempty"`
	Trace      string          `json:"trace,omitempty"`
	Env        []string        `json:"env,omitempty"`
	Child      int             `json:"child,omitempty"`
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		r.n--
		p[0] = 'x'
		return 1, nil
	}
	return 0, errors.New("stream broke")
}

func handle(ctx context.Context, e event) (any, error) {
	a := answer{Pid: os.Getpid()}
	switch e.Op {
	case "echo":
		a.Data = e.Data
	case "error":
		return nil, errors.New(e.Msg)
	case "panic":
		panic(e.Msg)
	case "sleep":
		time.Sleep(time.Duration(e.Ms) * time.Millisecond)
	case "exit":
		os.Exit(3)
	case "print":
		for i := range e.N {
			fmt.Fprintf(os.Stdout, "out %d %d %s\n", os.Getpid(), i, strings.Repeat("o", e.Width))
			fmt.Fprintf(os.Stderr, "err %d %d %s\n", os.Getpid(), i, strings.Repeat("e", e.Width))
		}
	case "huge":
		return strings.Repeat("h", e.N), nil
	case "stream-fail":
		return io.Reader(&failingReader{n: 10}), nil
	case "context":
		d, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("no deadline")
		}
		a.DeadlineMs = d.UnixMilli()
		lc, _ := lambdacontext.FromContext(ctx)
		a.RequestID = lc.AwsRequestID
		a.ARN = lc.InvokedFunctionArn
		a.Trace, _ = ctx.Value("x-amzn-trace-id").(string)
		a.Env = os.Environ()
	case "double":
		// Answers its own invocation through the Runtime API, after posting an answer for an
		// unknown id; aws-lambda-go then posts the handler's answer, which must be refused.
		lc, _ := lambdacontext.FromContext(ctx)
		base := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/invocation/"
		bogus, err := post(base+"00000000-0000-4000-8000-000000000000/response", "", "{}")
		if err != nil {
			return nil, err
		}
		if _, err := post(base+lc.AwsRequestID+"/response", "", fmt.Sprintf(`{"bogus_status":%d}`, bogus)); err != nil {
			return nil, err
		}
	case "raw-error":
		// Posts a non-JSON error body with the error type in the header only.
		lc, _ := lambdacontext.FromContext(ctx)
		base := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/invocation/"
		if _, err := post(base+lc.AwsRequestID+"/error", "Function.Custom", e.Msg); err != nil {
			return nil, err
		}
	case "spawn":
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			return nil, err
		}
		a.Child = c.Process.Pid
	default:
		return nil, fmt.Errorf("unknown op %q", e.Op)
	}
	return a, nil
}

// post posts body to url and returns the status code.
func post(url, errorType, body string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	if errorType != "" {
		req.Header.Set("Lambda-Runtime-Function-Error-Type", errorType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func main() {
	switch os.Getenv("FN_INIT") {
	case "hang":
		select {}
	case "error":
		body := `{"errorMessage":"config is missing","errorType":"InitConfigError"}`
		resp, err := http.Post("http://"+os.Getenv("AWS_LAMBDA_RUNTIME_API")+"/2018-06-01/runtime/init/error",
			"application/json", bytes.NewBufferString(body))
		if err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	case "exit":
		fmt.Println("exiting during init")
		os.Exit(4)
	}
	// On SIGTERM (sent by Close), exit at once, unless FN_SIGTERM=ignore: then Close must
	// wait out its grace period and SIGKILL the process.
	lambda.StartWithOptions(handle, lambda.WithEnableSIGTERM(func() {
		fmt.Println("SIGTERM received")
		if os.Getenv("FN_SIGTERM") != "ignore" {
			os.Exit(0)
		}
	}))
}
