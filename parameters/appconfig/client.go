package appconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
)

// Client speaks the AppConfig Data API
// (https://docs.aws.amazon.com/appconfig/2019-10-09/APIReference/API_Operations_AWS_AppConfig_Data.html)
// over HTTPS, each request signed with Signature Version 4 for the service "appconfig", with
// the credentials, region, HTTP client and retryer of an aws.Config. It is an [API].
type Client struct {
	cfg      aws.Config
	endpoint string
	signer   *v4.Signer
}

// NewClient returns a client of the AppConfig Data API of cfg's region
// (https://appconfigdata.REGION.amazonaws.com), or of endpoint when it is not empty (a
// local server, a VPC endpoint).
func NewClient(cfg aws.Config, endpoint string) *Client {
	if endpoint == "" {
		endpoint = "https://appconfigdata." + cfg.Region + ".amazonaws.com"
	}
	return &Client{cfg: cfg, endpoint: strings.TrimSuffix(endpoint, "/"), signer: v4.NewSigner()}
}

// APIError is an error answer of the AppConfig Data API. It satisfies smithy's
// APIError (ErrorCode, ErrorMessage, ErrorFault), so the SDK's retryers classify it: a
// ThrottlingException or an InternalServerException is retried.
type APIError struct {
	Status  int
	Code    string // x-amzn-ErrorType: "ResourceNotFoundException", "BadRequestException", ...
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("AppConfig Data: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// ErrorCode, ErrorMessage and ErrorFault are smithy.APIError's.
func (e *APIError) ErrorCode() string    { return e.Code }
func (e *APIError) ErrorMessage() string { return e.Message }
func (e *APIError) ErrorFault() int {
	if e.Status >= 500 {
		return 2 // smithy.FaultServer
	}
	return 1 // smithy.FaultClient
}

// Is makes a ResourceNotFoundException match [parameters.ErrNotFound].
func (e *APIError) Is(target error) bool {
	return target == parameters.ErrNotFound && e.Code == "ResourceNotFoundException"
}

// StartConfigurationSession is POST /configurationsessions.
func (c *Client) StartConfigurationSession(ctx context.Context, in Session) (string, error) {
	body := map[string]any{
		"ApplicationIdentifier":          in.Application,
		"EnvironmentIdentifier":          in.Environment,
		"ConfigurationProfileIdentifier": in.Profile,
	}
	if in.MinPollInterval > 0 {
		body["RequiredMinimumPollIntervalInSeconds"] = int(in.MinPollInterval / time.Second)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	_, data, err := c.do(ctx, http.MethodPost, "/configurationsessions", b, 64<<10)
	if err != nil {
		return "", err
	}
	var out struct{ InitialConfigurationToken string }
	if err := json.Unmarshal(data, &out); err != nil {
		// Not json's error: it may quote the answer.
		return "", fmt.Errorf("StartConfigurationSession: an answer of %d bytes that is not its JSON object", len(data))
	}
	return out.InitialConfigurationToken, nil
}

// GetLatestConfiguration is GET /configuration?configuration_token=TOKEN. A body over
// [limits.MaxAppConfigConfigurationBytes] is an error matching [parameters.ErrTooLarge], and is not read
// past that.
func (c *Client) GetLatestConfiguration(ctx context.Context, token string) (Latest, error) {
	resp, data, err := c.do(ctx, http.MethodGet, "/configuration?configuration_token="+url.QueryEscape(token), nil, limits.MaxAppConfigConfigurationBytes)
	if err != nil {
		return Latest{}, err
	}
	out := Latest{Configuration: data, NextToken: resp.Header.Get("Next-Poll-Configuration-Token"), ContentType: resp.Header.Get("Content-Type")}
	if s := resp.Header.Get("Next-Poll-Interval-In-Seconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 24*60*60 {
			return Latest{}, fmt.Errorf("GetLatestConfiguration: Next-Poll-Interval-In-Seconds %q is not 0 to 86400", s)
		}
		out.PollInterval = time.Duration(n) * time.Second
	}
	return out, nil
}

// do sends one request, retried as cfg's retryer says, and reads at most max bytes of the
// answer's body.
func (c *Client) do(ctx context.Context, method, path string, body []byte, max int) (*http.Response, []byte, error) {
	retryer := aws.Retryer(nil)
	if c.cfg.Retryer != nil {
		retryer = c.cfg.Retryer()
	}
	for attempt := 1; ; attempt++ {
		resp, data, err := c.once(ctx, method, path, body, max)
		if err == nil {
			return resp, data, nil
		}
		if retryer == nil || attempt >= retryer.MaxAttempts() || !retryer.IsErrorRetryable(err) || ctx.Err() != nil {
			if attempt > 1 {
				err = fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return nil, nil, err
		}
		delay, derr := retryer.RetryDelay(attempt, err)
		if derr != nil {
			return nil, nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("after %d attempts: %w (then %w)", attempt, err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

func (c *Client) once(ctx context.Context, method, path string, body []byte, max int) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sum := sha256.Sum256(body)
	if c.cfg.Credentials == nil {
		return nil, nil, errors.New("AppConfig Data: no credentials in the aws.Config")
	}
	creds, err := c.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("AppConfig Data: credentials: %w", err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "appconfig", c.cfg.Region, time.Now()); err != nil {
		return nil, nil, fmt.Errorf("AppConfig Data: sign: %w", err)
	}
	hc := aws.HTTPClient(http.DefaultClient)
	if c.cfg.HTTPClient != nil {
		hc = c.cfg.HTTPClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("AppConfig Data: read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode, Code: resp.Header.Get("X-Amzn-Errortype")}
		if i := strings.IndexByte(e.Code, ':'); i >= 0 {
			e.Code = e.Code[:i]
		}
		var msg struct{ Message string }
		if json.Unmarshal(data, &msg) == nil && len(msg.Message) < 1024 {
			e.Message = msg.Message
		}
		if e.Code == "" {
			e.Code = http.StatusText(resp.StatusCode)
		}
		return nil, nil, e
	}
	if len(data) > max {
		return nil, nil, fmt.Errorf("%w: an answer over %d bytes", parameters.ErrTooLarge, max)
	}
	return resp, data, nil
}
