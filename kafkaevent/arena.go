package kafkaevent

func (p *parser) takeArena(n int) []byte {
	l := len(p.arena)
	p.arena = p.arena[:l+n]
	return p.arena[l : l+n : l+n]
}

// arenaBound is the most bytes that n bytes of payload can decode to: base64 gives three bytes
// for four characters, a header byte list at most one for two.
func arenaBound(n int) int { return n/4*3 + 64 }

// reserve makes room for n more bytes in the arena. When the arena is full, a new one is
// started, big enough for everything the rest of the payload can decode to, so this happens at
// most once per batch after presize; the old arena stays alive through the slices already taken
// from it.
func (p *parser) reserve(n int) { p.reserveAt(n, p.Pos) }

// reserveAt is reserve for a parser reading at pos.
func (p *parser) reserveAt(n, pos int) {
	if cap(p.arena)-len(p.arena) >= n {
		return
	}
	p.arena = make([]byte, 0, max(n, arenaBound(len(p.Data)-pos)))
}

func (p *parser) copyBytes(b []byte) []byte {
	p.reserve(len(b))
	l := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[l : l+len(b) : l+len(b)]
}

// headerList reads headers: null, or an array of single-name objects whose values are arrays
// of byte numbers or null. Java bytes are signed, so -128..127 is what Lambda sends; 128..255
// is accepted too, for producers that wrote unsigned bytes.
