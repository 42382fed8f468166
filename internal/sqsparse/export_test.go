package sqsparse

import "github.com/aws/aws-lambda-go/events"

// ParseSplit is Parse with every Records array of at least min bytes split between two
// goroutines (split.go), and whether it was.
func ParseSplit(data []byte, min int) (*events.SQSEvent, bool, error) { return parseSplit(data, min) }

// ParseAlone is Parse in one goroutine.
func ParseAlone(data []byte) (*events.SQSEvent, error) {
	ev, _, err := parse(data, -1)
	return ev, err
}
