package plancmd

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/suggest"
	"github.com/kafkalambda/toolkit/internal/template"
)

// The bounds of the files klt plan reads.
const (
	// configLimit caps a --config file: a plan's inputs are three dozen keys, a few hundred
	// bytes; 64 KiB is a hundred times that.
	configLimit = 64 << 10
	// reportLimit caps a --from-report file: klt local's report.json of make demo is a few
	// hundred KB (it lists at most the records it followed one by one, and series sampled
	// each second); 64 MiB is far past any run.
	reportLimit = 64 << 20
)

// readCapped reads the file name, failing when it holds more than limit bytes (what is the
// file, for the message).
func readCapped(name string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes, klt's limit for %s; klt read no further", name, limit, what)
	}
	return data, nil
}

// ReadConfig reads a --config file, YAML or JSON, whose keys are capacity.Input's JSON names
// (fanout and prices are mappings of theirs), into in. Each value is read by the parser of the
// option's flag (a size takes 1KB, a duration 300ms) and must be of the option's kind: a number
// for a rate or a count, a string for a duration or a number of milliseconds (as the plan's
// JSON writes one: the "input" of a plan's JSON is a --config file), true or false for a
// switch. It refuses, naming the line and column: a key that is not an input (with the
// nearest one), a key given twice (the reader's refusal, which YAML leaves to it), a null, a
// list or mapping where a figure goes, and whatever the parsers refuse. The file is read by
// the toolkit's one YAML reader, template.ReadNode, with its bounds on aliases and depth.
func ReadConfig(name string, data []byte, in *capacity.Input) error {
	return readConfig(name, data, in, nil)
}

// readConfig is ReadConfig, recording in pos (when not nil) the position of each key's value,
// by the key's JSON name ("fanout.queue", "prices.lambda_gb_second"), so that the model's
// refusal of a figure can name the place it came from.
func readConfig(name string, data []byte, in *capacity.Input, pos map[string]string) error {
	root, err := template.ReadNode(name, data)
	if err != nil {
		return err
	}
	if root.Kind != template.Mapping {
		return fmt.Errorf("%s: want a mapping of the plan's inputs (rate: 100, duration: 300ms ...), not %s", root.Pos, describe(root))
	}
	if pos == nil {
		pos = map[string]string{}
	}
	return readMapping(root, "", in, pos)
}

// readMapping reads the pairs of the mapping n, whose keys are prefix followed by an input's
// name. An error names the value's position, the key and, for a figure a parser refused, the
// figure: "plan.yaml:3:13: batch_size: 1.5: not a whole number".
func readMapping(n *template.Node, prefix string, in *capacity.Input, pos map[string]string) error {
	for _, p := range n.Pairs {
		key := prefix + p.Key
		switch {
		case key == "prices":
			if err := readPrices(p.Value, &in.Prices, pos); err != nil {
				return err
			}
			continue
		case key == "fanout":
			if p.Value.Kind != template.Mapping {
				return fmt.Errorf("%s: fanout: want a mapping of the fan-out's inputs (queue: fifo ...), not %s", p.Value.Pos, describe(p.Value))
			}
			if err := readMapping(p.Value, "fanout.", in, pos); err != nil {
				return err
			}
			continue
		case key == "lmi":
			if p.Value.Kind != template.Mapping {
				return fmt.Errorf("%s: lmi: want a mapping of the LMI inputs (instance_type: m7g.large ...), not %s", p.Value.Pos, describe(p.Value))
			}
			if err := readMapping(p.Value, "lmi.", in, pos); err != nil {
				return err
			}
			continue
		}
		opt := optionByKey(key)
		if opt == nil {
			return fmt.Errorf("%s: unknown key %q%s", p.KeyPos, p.Key, didYouMean(key))
		}
		text, err := scalarText(p.Value, opt.value(in))
		if err != nil {
			return fmt.Errorf("%s: %s: %w", p.Value.Pos, key, err)
		}
		if err := opt.value(in).Set(text); err != nil {
			return fmt.Errorf("%s: %s: %s: %w", p.Value.Pos, key, text, err)
		}
		pos[key] = p.Value.Pos.String()
	}
	return nil
}

// readPrices reads the prices mapping n into prices.
func readPrices(n *template.Node, prices *capacity.Prices, pos map[string]string) error {
	if n.Kind != template.Mapping {
		return fmt.Errorf("%s: prices: want a mapping of unit prices (lambda_gb_second: 0.0000133334 ...), not %s", n.Pos, describe(n))
	}
	for _, p := range n.Pairs {
		if p.Value.Kind != template.Scalar || p.Value.Tag != template.TagInt && p.Value.Tag != template.TagFloat {
			return fmt.Errorf("%s: prices.%s: want a price in US dollars, not %s", p.Value.Pos, p.Key, describe(p.Value))
		}
		if err := setPrice(prices, p.Key, p.Value.Text); err != nil {
			return fmt.Errorf("%s: prices.%s: %s: %w", p.KeyPos, p.Key, p.Value.Text, err)
		}
		pos["prices."+p.Key] = p.Value.Pos.String()
	}
	return nil
}

// scalarText returns the text of the value n for the option whose flag.Value is v, after
// checking that n is of the option's kind: a number (a size also as a string: 1KB), a string
// or a number of milliseconds for a duration, a string for a choice, a bool for a switch.
func scalarText(n *template.Node, v flag.Value) (string, error) {
	if n.Kind != template.Scalar || n.Tag == template.TagNull {
		return "", fmt.Errorf("want a value, not %s", describe(n))
	}
	number := n.Tag == template.TagInt || n.Tag == template.TagFloat
	switch v.(type) {
	case *floatValue, *intValue, *sizeValue:
		if number {
			// The number's text goes to the flag's parser, so that the file and the flag read
			// it alike; YAML 1.1's octal (0010 is 8) and other bases are refused as slips.
			if octal.MatchString(n.Text) || strings.ContainsAny(n.Text, "_xXoObB") {
				return "", fmt.Errorf("%s: write the number in decimal, without leading zeros or underscores (YAML 1.1 reads 0010 as 8)", n.Text)
			}
			return n.Text, nil
		}
		if _, isSize := v.(*sizeValue); isSize && n.IsString() {
			return n.Text, nil
		}
		return "", fmt.Errorf("want a number, not %s", describe(n))
	case *durationValue:
		if !number {
			break
		}
		// A number is milliseconds, as the plan's JSON writes a duration (its "input" read
		// back is a --config file).
		ms, err := parseNumber(n.Text)
		if err != nil || octal.MatchString(n.Text) {
			return "", fmt.Errorf("%s: want a duration (300ms) or a number of milliseconds", n.Text)
		}
		if ms*float64(time.Millisecond) > float64(maxDuration) {
			return "", fmt.Errorf("%s ms is longer than a year", n.Text)
		}
		return time.Duration(math.Round(ms * float64(time.Millisecond))).String(), nil
	case *boolValue:
		if n.Tag != template.TagBool {
			return "", fmt.Errorf("want true or false, not %s", describe(n))
		}
		b, err := n.Plain()
		return fmt.Sprint(b), err
	}
	if !n.IsString() {
		return "", fmt.Errorf("want a string, not %s", describe(n))
	}
	return n.Text, nil
}

// octal matches a number YAML 1.1 reads as octal: a leading 0 followed by a digit.
var octal = regexp.MustCompile(`^[+-]?0[0-9]`)

// describe names what n is, for a message: "the number 3", "a list", "null".
func describe(n *template.Node) string {
	switch {
	case n.Kind == template.Mapping:
		return "a mapping"
	case n.Kind == template.Sequence:
		return "a list"
	case n.Tag == template.TagNull:
		return "null"
	case n.Tag == template.TagInt || n.Tag == template.TagFloat:
		return "the number " + n.Text
	case n.Tag == template.TagBool:
		return "the bool " + n.Text
	}
	return strconv.Quote(n.Text)
}

// didYouMean returns ` (did you mean "x"?)` for the input key nearest to key, when one is
// near enough to be a slip.
func didYouMean(key string) string {
	best, bestD := "", math.MaxInt
	for _, o := range options {
		if d := suggest.Distance(strings.ToLower(key), o.key); d < bestD {
			best, bestD = o.key, d
		}
	}
	for _, k := range []string{"prices", "fanout"} {
		if d := suggest.Distance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	if 3*bestD > len(key) {
		if o := optionByKey("fanout." + key); o != nil {
			return fmt.Sprintf(" (did you mean %q, under fanout?)", key)
		}
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
