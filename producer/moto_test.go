package producer_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/internal/procgroup"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// motoStartTimeout bounds how long startMoto waits for moto_server to listen (Python imports
// take a second or two on a busy machine).
const motoStartTimeout = 30 * time.Second

// moto is one moto_server process (moto 5, `pip install 'moto[server]'`): a real local Secrets
// Manager, on a free loopback port, for one test.
type moto struct {
	endpoint string
	cmd      *exec.Cmd
	out      *syncBuffer
	exited   chan struct{}
}

// startMoto starts moto_server for t and stops it when t ends. A moto_server that is missing
// or does not start fails t; it never skips.
func startMoto(t testing.TB) *moto {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server (moto 5, pip install 'moto[server]') is needed for the Secrets Manager tests: %v", err)
	}
	out := &syncBuffer{}
	pr, pw := io.Pipe()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", "0")
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, pw), io.MultiWriter(out, pw)
	cmd.WaitDelay = 2 * time.Second
	procgroup.Set(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	m := &moto{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(m.exited)
	}()
	t.Cleanup(m.stop)

	// werkzeug prints " * Running on http://127.0.0.1:PORT" once it listens.
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
		_, _ = io.Copy(io.Discard, pr) // keep the pipe drained
	}()
	select {
	case m.endpoint = <-found:
	case <-m.exited:
		t.Fatalf("moto_server exited before it listened:\n%s", out)
	case <-time.After(motoStartTimeout):
		t.Fatalf("moto_server did not listen within %v:\n%s", motoStartTimeout, out)
	}
	return m
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

// client returns a Secrets Manager client of the server: static test credentials, us-east-1,
// and standin's retryer (a stopped server fails at once). optFns run last.
func (m *moto) client(optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(m.endpoint)
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

// createSecret creates a secret with the given SecretString and returns its ARN.
func (m *moto) createSecret(t testing.TB, name, value string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := m.client().CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
	if err != nil {
		t.Fatalf("create secret %s: %v\nmoto_server output:\n%s", name, err, m.out)
	}
	return aws.ToString(out.ARN)
}

// rotate puts a new current value, as a rotation function's last step does.
func (m *moto) rotate(t testing.TB, id, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.client().PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("put secret value %s: %v", id, err)
	}
}

// counting counts the GetSecretValue calls made through it to the real client.
type counting struct {
	producerSecrets
	n atomic.Int64
}

type producerSecrets interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

func (c *counting) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.n.Add(1)
	return c.producerSecrets.GetSecretValue(ctx, in, optFns...)
}

func scramJSON(user, pass string) string {
	return fmt.Sprintf(`{"username":%q,"password":%q}`, user, pass)
}

// syncBuffer is a bytes.Buffer safe for the process's two output streams.
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
