package esmevent

// IndentJSON returns compact JSON src indented by two spaces per level, like json.Indent,
// except that an object or array stays on one line when it holds no object or array, or when
// its compact text is at most inlineWidth bytes. A header is a one-member object holding an
// array of byte numbers; one number per line would bury the rest of the event. src must be
// valid compact JSON, as MarshalJSON writes it.
func IndentJSON(src []byte) []byte {
	dst := make([]byte, 0, len(src)+len(src)/4)
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			if end, ok := inlineEnd(src, i); ok {
				dst = append(dst, src[i:end]...)
				i = end - 1
				continue
			}
			dst = append(dst, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// inlineWidth is the longest compact text of an object or array holding others that
// indentJSON keeps on one line.
const inlineWidth = 80

// inlineEnd reports whether indentJSON keeps the object or array starting at src[i] on one
// line, and if so the index just past its end. It stops scanning as soon as the answer is no.
func inlineEnd(src []byte, i int) (int, bool) {
	depth, nested := 0, false
	for j := i; j < len(src); j++ {
		if nested && j-i >= inlineWidth {
			return 0, false
		}
		switch src[j] {
		case '"':
			j = stringEnd(src, j) - 1
		case '{', '[':
			depth++
			nested = nested || depth > 1
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// stringEnd returns the index just past the JSON string that starts at src[i], a quote.
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}
