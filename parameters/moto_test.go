package parameters_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit/internal/procgroup"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// The tests share one moto_server (moto 5, `pip install 'moto[server]'`), a real local SSM
// Parameter Store and Secrets Manager, started as producer's Secrets Manager tests start it
// (producer/moto_test.go), once for the package: Python's start costs seconds. Each test uses
// names of its own. moto does not serve the AppConfig Data API (moto 5.2.1 has appconfig's
// control plane only), so AppConfig is tested against an httptest server (appconfig_test.go).
var motoSrv *moto

func TestMain(m *testing.M) {
	code := m.Run()
	if motoSrv != nil {
		motoSrv.stop()
	}
	os.Exit(code)
}

const motoStartTimeout = 30 * time.Second

type moto struct {
	endpoint string
	cmd      *exec.Cmd
	out      *syncBuffer
	exited   chan struct{}
}

var (
	motoOnce sync.Once
	motoErr  error
)

// startMoto returns the package's moto_server, starting it on first use. A moto_server that
// is missing or does not start fails t; it never skips.
func startMoto(t testing.TB) *moto {
	t.Helper()
	motoOnce.Do(func() { motoSrv, motoErr = launchMoto() })
	if motoErr != nil {
		t.Fatal(motoErr)
	}
	return motoSrv
}

func launchMoto() (*moto, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, fmt.Errorf("moto_server (moto 5, pip install 'moto[server]') is needed for the SSM and Secrets Manager tests: %w", err)
	}
	out := &syncBuffer{}
	pr, pw := io.Pipe()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", "0")
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, pw), io.MultiWriter(out, pw)
	cmd.WaitDelay = 2 * time.Second
	procgroup.Set(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	m := &moto{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(m.exited)
	}()
	running := regexp.MustCompile(`Running on (http://127\.0\.0\.1:[0-9]+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := running.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case m.endpoint = <-found:
		return m, nil
	case <-m.exited:
		return nil, fmt.Errorf("moto_server exited before it listened:\n%s", out)
	case <-time.After(motoStartTimeout):
		m.stop()
		return nil, fmt.Errorf("moto_server did not listen within %v:\n%s", motoStartTimeout, out)
	}
}

func (m *moto) stop() {
	select {
	case <-m.exited:
		return
	default:
	}
	procgroup.Kill(m.cmd)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
	}
}

// ssmClient and secretsClient are clients of the server: static test credentials, us-east-1,
// standin's retryer (3 attempts, backoff at most 100 ms). optFns run last.
func (m *moto) ssmClient(optFns ...func(*ssm.Options)) *ssm.Client {
	return ssm.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*ssm.Options){func(o *ssm.Options) {
		o.BaseEndpoint = aws.String(m.endpoint)
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

func (m *moto) secretsClient(optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(m.endpoint)
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

func (m *moto) putParameter(t testing.TB, name, value string, typ ssmtypes.ParameterType) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.ssmClient().PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatalf("put parameter %s: %v\nmoto_server output:\n%s", name, err, m.out)
	}
}

func (m *moto) createSecret(t testing.TB, name, value string, binary []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := &secretsmanager.CreateSecretInput{Name: aws.String(name)}
	if binary != nil {
		in.SecretBinary = binary
	} else {
		in.SecretString = aws.String(value)
	}
	out, err := m.secretsClient().CreateSecret(ctx, in)
	if err != nil {
		t.Fatalf("create secret %s: %v\nmoto_server output:\n%s", name, err, m.out)
	}
	return aws.ToString(out.ARN)
}

func (m *moto) rotate(t testing.TB, id, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.secretsClient().PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("put secret value %s: %v", id, err)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ = errors.New
