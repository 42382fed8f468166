package kafkaevent

import "errors"

// Parse decodes an event source mapping payload. (Being written.)
func Parse(data []byte) (*Event, error) {
	return nil, errors.New("not implemented")
}
