package kafkaevent

// ParseGeneral is Parse with every record read on the general path, for tests that check that
// the fast path agrees with it.
func ParseGeneral(data []byte) (*Event, error) { return parse(data, true) }
