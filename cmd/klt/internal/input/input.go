// Package input is the one way klt reads a file or standard input: every input has a cap,
// stated here with the reason for its number, and reading stops one byte past it with a
// *TooLargeError that names the input and the cap. An endless stream (/dev/zero, a pipe that
// never closes) costs at most the cap in memory, never the machine. It also tells a whole
// event from JSON Lines (EventKind) and names an input for messages (Name, ShellQuote), and
// checks the host:port lists klt takes (SplitServers).
//
// It is below klt's commands and engines alike: it prints nothing and returns errors.
package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
)

// MaxPayload is the largest request payload of a synchronous Lambda invocation, 6 MB. An event
// larger than this is one Lambda never sends.
const MaxPayload = 6 << 20

// Kinds of event that "klt filter test" reads.
const (
	KindKafka = "Kafka"
	KindSQS   = "SQS"
)

// Limit is the most bytes klt reads of one kind of input, and why that many.
type Limit struct {
	Max int64
	why string // ends the error: "the largest payload of a Lambda invocation"
}

// The caps of klt's inputs.
var (
	// EventLimit caps an event (klt event decode, filter test --event, invoke): 6 MB, the
	// largest payload of a synchronous Lambda invocation, so nothing Lambda sends is refused.
	EventLimit = Limit{MaxPayload, "the largest payload of a Lambda invocation"}
	// ResponseLimit caps a function's response that klt invoke reads from the emulator: Lambda
	// refuses a response payload over 6 MB too.
	ResponseLimit = Limit{MaxPayload, "the largest response payload of a Lambda invocation"}
	// TemplateLimit caps a SAM or CloudFormation template, and a FilterCriteria or pattern
	// file: 1 MB, the largest template body CloudFormation takes (from S3).
	TemplateLimit = Limit{1 << 20, "the largest template CloudFormation takes"}
	// LinesLimit caps the JSON Lines records of klt event build and klt produce in total;
	// lineLimit caps one line of them (see jsonl.ReadLines).
	LinesLimit = Limit{maxLinesBytes, "klt's limit for JSON Lines input; split it"}
	// EnvVarsLimit caps a sam local invoke --env-vars file: Lambda gives a function 4 KB of
	// environment variables, so 1 MB holds those of any stack.
	EnvVarsLimit = Limit{1 << 20, "klt's limit for an --env-vars file"}
	// SchemaLimit caps an Avro or Protobuf schema file (and each file a .proto imports): the
	// AWS Glue Schema Registry takes schemas of up to 170 KB, Confluent's of up to 1 MB.
	SchemaLimit = Limit{1 << 20, "klt's limit for a schema file"}
	// SourceLimit caps a Go source file or go.mod that klt lint and klt invoke read from a
	// function's code: no file written by hand comes near it.
	SourceLimit = Limit{16 << 20, "klt's limit for a Go source file"}
)

// The caps of JSON Lines input, stated in the help of klt event build and klt produce.
const (
	// maxLinesBytes is the most JSON Lines klt reads in one run: a 6 MB event, or records
	// for a topic, many times over.
	maxLinesBytes = 64 << 20
	// MaxLineBytes is the longest line: an 8 MB record value (the largest message.max.bytes
	// Amazon MSK allows) written as valueBase64.
	MaxLineBytes = 12 << 20
)

// ErrTooLarge is the error of an input longer than its cap: errors.Is finds it in every
// *tooLargeError.
var ErrTooLarge = errors.New("input too large")

// TooLargeError reports an input longer than its cap. Its message is
// "NAME: more than N bytes (M MB, WHY)".
type TooLargeError struct {
	Name  string
	Limit Limit
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: more than %d bytes (%s, %s); klt read no further", e.Name, e.Limit.Max, clitext.SizeText(e.Limit.Max), e.Limit.why)
}

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ReadCapped reads r to its end, or fails with a *tooLargeError as soon as it has given more
// than lim.max bytes. name names r in errors.
func ReadCapped(name string, r io.Reader, lim Limit) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, lim.Max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > lim.Max {
		return nil, &TooLargeError{name, lim}
	}
	return data, nil
}

// ReadFileCapped reads the file name, at most lim.max bytes of it (see readCapped).
func ReadFileCapped(name string, lim Limit) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCapped(name, f, lim)
}

// Read reads the input that args name: the file args[0], or stdin when args is empty or
// args[0] is "-", at most lim.max bytes. A UTF-8 byte order mark at its start, which some
// editors write, is dropped.
func Read(args []string, stdin io.Reader, lim Limit) ([]byte, error) {
	name := "-"
	if len(args) > 0 {
		name = args[0]
	}
	return ReadFileOrStdin(name, stdin, lim)
}

// ReadFileOrStdin reads the file name, or standard input when name is "-", at most lim.max
// bytes, without the UTF-8 byte order mark some editors write at the start of a file.
func ReadFileOrStdin(name string, stdin io.Reader, lim Limit) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = ReadCapped("<stdin>", stdin, lim)
	} else {
		data, err = ReadFileCapped(name, lim)
	}
	return TrimBOM(data), err
}

// TrimBOM returns data without the UTF-8 byte order mark some editors write at its start.
func TrimBOM(data []byte) []byte { return bytes.TrimPrefix(data, []byte("\uFEFF")) }

// EventKind returns kindKafka or kindSQS when data is a whole Kafka or SQS event rather than
// JSON Lines, and "" otherwise: a single JSON object with the members of an event.
func EventKind(data []byte) string {
	if !json.Valid(data) {
		return ""
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return ""
	}
	_, hasSource := top["eventSource"]
	_, hasKafkaRecords := top["records"]
	_, hasSQSRecords := top["Records"]
	switch {
	case hasKafkaRecords || hasSource && !hasSQSRecords:
		return KindKafka
	case hasSQSRecords:
		return KindSQS
	}
	return ""
}

// Name returns the name of the input file args name, for messages: "<stdin>" when there is
// none or it is "-".
func Name(args []string) string {
	if len(args) == 0 || args[0] == "-" {
		return "<stdin>"
	}
	return args[0]
}

// ShellQuote quotes name for a command line shown in a message, when it needs quoting.
func ShellQuote(name string) string {
	if name == "<stdin>" {
		return "FILE"
	}
	if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@") == "" {
		return name
	}
	return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
}

// WithArticle returns "a Kafka" or "an SQS".
func WithArticle(kind string) string {
	if kind == KindSQS {
		return "an " + kind
	}
	return "a " + kind
}

// SplitServers splits a comma-separated list of host:port entries, checking each; "" is the
// empty list.
func SplitServers(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var servers []string
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		host, port, err := net.SplitHostPort(hp)
		if err == nil && host == "" {
			err = errors.New("no host")
		}
		if err == nil {
			if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 {
				err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("want host:port entries, got %q: %w", hp, err)
		}
		servers = append(servers, hp)
	}
	return servers, nil
}
