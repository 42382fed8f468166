package kafkaevent

// ParseGeneral is Parse with every record read on the general path, for tests that check that
// the fast path agrees with it.
func ParseGeneral(data []byte) (*Event, error) { return parse(data, true, false) }

// ParseNoSIMD is Parse with base64 decoded by the plain Go code alone, whatever the machine has.
func ParseNoSIMD(data []byte) (*Event, error) { return parse(data, false, true) }

// HaveSIMD reports whether this build decodes base64 with vector instructions on this machine.
func HaveSIMD() bool { return haveSIMD }
