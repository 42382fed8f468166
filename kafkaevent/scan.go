package kafkaevent

// The reading of values, objects, arrays and the errors about them is jsonscan.Reader's,
// which parser embeds; what is here is the Kafka parser's own.

// intern returns b as a string, allocating once per distinct value in the event: header names,
// timestamp types and schema ids repeat on every record.
func (p *parser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	if p.strs == nil {
		p.strs = make(map[string]string)
	}
	s := string(b)
	if len(p.strs) < 4096 {
		p.strs[s] = s
	}
	return s
}

// stringOrNull reads a string (ok) or null (not ok); anything else is left unread.
func (p *parser) stringOrNull() (string, bool, error) {
	if p.Null() {
		return "", false, nil
	}
	if p.Pos < len(p.Data) && p.Data[p.Pos] == '"' {
		s, err := p.Str()
		return s, err == nil, err
	}
	if err := p.CheckValue(1); err != nil {
		return "", false, err
	}
	return "", false, nil
}

// checkValue validates the JSON value at off, at nesting depth depth, without consuming it,
// so that a type error on a value that is not even JSON is reported as the syntax error it is.
func (p *parser) checkValue(off, depth int) error {
	p.Pos = off
	return p.CheckValue(depth)
}
