package producer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connWatch is a kgo hook that [Opts] installs: it sees every connection attempt, so that
// [Produce] can stop waiting as soon as a connection fails in a way retrying cannot fix
// (authentication refused, a token or credentials that cannot be made, a TLS certificate not
// trusted), and can name the last connection error when it gives up at the deadline.
type connWatch struct {
	scram *secretSCRAM // WithSCRAMSecret's mechanism, told of failed connections; or nil

	mu      sync.Mutex
	waiters map[chan error]struct{}
	last    error
	lastAt  time.Time
}

var (
	_ kgo.HookBrokerConnect = (*connWatch)(nil)
	_ kgo.HookBrokerE2E     = (*connWatch)(nil)
)

// OnBrokerE2E records a failed request (a connection the broker closed, say) as the last
// connection error.
func (w *connWatch) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	err := e2e.Err()
	if err == nil {
		return
	}
	err = fmt.Errorf("broker %s: %s request: %w", net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port)), kmsg.NameForKey(key), err)
	w.mu.Lock()
	w.last, w.lastAt = err, time.Now()
	w.mu.Unlock()
}

func (w *connWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	addr := net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port))
	// A refused SCRAM authentication is not final when the secret is read again for the next
	// one (it was rotated): the records wait for that connection.
	retrying := false
	if w.scram != nil {
		retrying = w.scram.refused(addr)
	}
	err = fmt.Errorf("broker %s: %w", addr, err)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.lastAt = err, time.Now()
	if retrying || !permanent(err) {
		return
	}
	for ch := range w.waiters {
		select {
		case ch <- err:
		default:
		}
	}
}

func (w *connWatch) subscribe() (ch chan error, unsubscribe func()) {
	ch = make(chan error, 1)
	w.mu.Lock()
	if w.waiters == nil {
		w.waiters = make(map[chan error]struct{})
	}
	w.waiters[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.waiters, ch)
		w.mu.Unlock()
	}
}

// lastSince returns the last connection error seen at or after t.
func (w *connWatch) lastSince(t time.Time) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil || w.lastAt.Before(t) {
		return nil
	}
	return w.last
}

// tokenError is the error of making an MSK IAM token (credentials the provider cannot give).
type tokenError struct{ err error }

func (e *tokenError) Error() string { return e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// permanent reports whether a connection error is one that reconnecting will not cure.
func permanent(err error) bool {
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return true
	}
	if _, ok := errors.AsType[*tokenError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	return false
}

// watchOf finds the connWatch Opts installed on cl, if cl was made from Opts.
func watchOf(cl *kgo.Client) *connWatch {
	hooks, _ := cl.OptValue(kgo.WithHooks).([]kgo.Hook)
	for _, h := range hooks {
		if w, ok := h.(*connWatch); ok {
			return w
		}
	}
	return nil
}

// notAcknowledged is the error of a record Produce stopped waiting for: errors.Is matches
// ErrNotAcknowledged and the cause.
type notAcknowledged struct{ cause error }

func (e *notAcknowledged) Error() string {
	return "producer: not acknowledged: " + e.cause.Error()
}
func (e *notAcknowledged) Is(target error) bool { return target == ErrNotAcknowledged }
func (e *notAcknowledged) Unwrap() error        { return e.cause }
