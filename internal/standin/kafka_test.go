package standin

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-msk-iam-sasl-signer-go/signer"
	"github.com/aws/aws-sdk-go-v2/aws"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "tok"}

func secretOf(id string) (string, bool) {
	if id == testCreds.AccessKeyID {
		return testCreds.SecretAccessKey, true
	}
	return "", false
}

func token(t testing.TB, region string) string {
	t.Helper()
	tok, _, err := signer.GenerateAuthTokenFromCredentialsProvider(context.Background(), region,
		aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return testCreds, nil }))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerify(t *testing.T) {
	tok := token(t, "eu-west-1")
	now := time.Now()
	if id, err := VerifyIAMToken(tok, "eu-west-1", now, secretOf); err != nil || id != testCreds.AccessKeyID {
		t.Fatalf("good token: %q, %v", id, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	reenc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, token, region string
		now                 time.Time
		want                string
	}{
		{"other region", tok, "us-east-1", now, "host"},
		{"padded base64", base64.URLEncoding.EncodeToString(raw), "eu-west-1", now, "base64url"},
		{"std base64", base64.StdEncoding.EncodeToString(raw), "eu-west-1", now, "base64url"},
		{"expired", tok, "eu-west-1", now.Add(901 * time.Second), "expired"},
		{"from the future", tok, "eu-west-1", now.Add(-10 * time.Minute), "future"},
		{"other action", reenc(strings.Replace(string(raw), "kafka-cluster%3AConnect", "kafka-cluster%3AWriteData", 1)), "eu-west-1", now, "Action"},
		{"longer expiry", reenc(strings.Replace(string(raw), "X-Amz-Expires=900", "X-Amz-Expires=3600", 1)), "eu-west-1", now, "X-Amz-Expires"},
		{"session token changed", reenc(strings.Replace(string(raw), "X-Amz-Security-Token=tok", "X-Amz-Security-Token=other", 1)), "eu-west-1", now, "signature mismatch"},
		{"http", reenc(strings.Replace(string(raw), "https://", "http://", 1)), "eu-west-1", now, "scheme"},
		{"unknown key", reenc(strings.Replace(string(raw), "AKIDEXAMPLE", "AKIDOTHER", 1)), "eu-west-1", now, "unknown access key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifyIAMToken(tc.token, tc.region, tc.now, secretOf)
			if !errors.Is(err, ErrIAMRejected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want ErrIAMRejected saying %q", err, tc.want)
			}
		})
	}
	wrong := func(string) (string, bool) { return "wrong", true }
	if _, err := VerifyIAMToken(tok, "eu-west-1", now, wrong); err == nil || !strings.Contains(err.Error(), "signature mismatch") {
		t.Fatalf("wrong secret: %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	for msg, want := range map[string]string{
		"n,,\x01auth=Bearer abc\x01\x01":                 "abc",
		"n,a=user,\x01host=x\x01auth=Bearer abc\x01\x01": "abc",
	} {
		if got, err := bearerToken([]byte(msg)); err != nil || got != want {
			t.Errorf("%q: %q, %v", msg, got, err)
		}
	}
	for _, msg := range []string{"", "y,,\x01auth=Bearer abc\x01\x01", "n,,\x01auth=Basic abc\x01\x01", "n,,"} {
		if _, err := bearerToken([]byte(msg)); !errors.Is(err, ErrIAMRejected) {
			t.Errorf("%q: %v", msg, err)
		}
	}
}

// FuzzVerify: Verify and bearerToken never panic, and nothing verifies without the secret.
// The seed corpus is testdata/fuzz/FuzzVerify plus a real token.
func FuzzVerify(f *testing.F) {
	f.Add(token(f, "us-east-1"), "us-east-1")
	f.Add("", "us-east-1")
	f.Add("aHR0cHM6Ly9rYWZrYS51cy1lYXN0LTEuYW1hem9uYXdzLmNvbS8", "us-east-1")
	f.Fuzz(func(t *testing.T, tok, region string) {
		_, _ = bearerToken([]byte(tok))
		id, err := VerifyIAMToken(tok, region, time.Now(), func(string) (string, bool) { return "", false })
		if err == nil {
			t.Fatalf("verified %q as %q without any secret", tok, id)
		}
		if !errors.Is(err, ErrIAMRejected) {
			t.Fatalf("error %v does not wrap ErrIAMRejected", err)
		}
	})
}
