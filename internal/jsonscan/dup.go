package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Path is where a value is in a JSON document: the steps from the top-level value to it.
type Path []Step

// Step is one step of a Path: into the member Name of an object (Index is -1), or into the
// element Index of an array.
type Step struct {
	Name  string
	Index int
}

// String writes the path as the decoders' errors do: Records[0].messageAttributes["a b"],
// member names by Member, the first without its dot; "$" for the top-level value.
func (p Path) String() string {
	if len(p) == 0 {
		return "$"
	}
	var b strings.Builder
	for i, s := range p {
		if s.Index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
			continue
		}
		m := Member(s.Name)
		if i == 0 {
			m = strings.TrimPrefix(m, ".")
		}
		b.WriteString(m)
	}
	return b.String()
}

// Duplicate is a member that an object gives a second time.
type Duplicate struct {
	Object Path   // the object's path
	Name   string // the second member's name, decoded
	Field  string // the field that both names stand for
	Offset int64  // the offset of the second name's opening quote
	First  int64  // the offset of the first name's opening quote
}

// Path returns the path of the second member.
func (d Duplicate) Path() Path {
	return append(d.Object[:len(d.Object):len(d.Object)], Step{Name: d.Name, Index: -1})
}

// ErrNotJSON is wrapped by FindDuplicates's error for input that is not valid JSON.
var ErrNotJSON = errors.New("jsonscan: not valid JSON")

// FindDuplicates calls found with each member that an object in data gives a second time, in
// document order, until found returns false. encoding/json keeps the last of two such members
// and other readers the first, so input that depends on which is ambiguous: the decoders refuse
// it, and their tests find it with this.
//
// field says which field the member name stands for in the object at obj (a path that field
// must not keep): names that stand for the same field are the same member, as "body" and
// "Body" are for encoding/json decoding into a struct; ok false stands for none, and the name
// is not checked. A nil field takes every name for a field of its own, as a map does.
//
// It walks data with encoding/json's tokenizer, apart from the toolkit's readers, so that tests
// can hold those to it. It returns nil at the end of data or when found stops it; at input that
// is not valid JSON, an error wrapping ErrNotJSON; at nesting deeper than MaxDepth, an *Error at
// the container that goes too deep.
func FindDuplicates(data []byte, field func(obj Path, name string) (f string, ok bool), found func(Duplicate) bool) error {
	w := dupWalker{data: data, dec: json.NewDecoder(bytes.NewReader(data)), field: field, found: found}
	err := w.value(0)
	if err == errStop {
		return nil
	}
	if err == nil {
		if _, terr := w.dec.Token(); terr != io.EOF {
			return fmt.Errorf("%w: data after the top-level value at offset %d", ErrNotJSON, w.dec.InputOffset())
		}
	}
	return err
}

// errStop ends the walk when found says so.
var errStop = errors.New("stop")

// dupWalker walks a document token by token for FindDuplicates.
type dupWalker struct {
	data  []byte
	dec   *json.Decoder
	path  Path
	field func(Path, string) (string, bool)
	found func(Duplicate) bool
}

// value reads one value, inside depth containers, and checks the objects in it.
func (w *dupWalker) value(depth int) error {
	before := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	if depth+1 > MaxDepth {
		return &Error{Offset: int(skipTo(w.data, before, byte(tok.(json.Delim)))), Msg: DepthMessage()}
	}
	if tok == json.Delim('{') {
		err = w.members(depth + 1)
	} else {
		err = w.elements(depth + 1)
	}
	if err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != nil { // the closing '}' or ']'
		return fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	return nil
}

// members reads the members of an object, the depth-th container, whose '{' has been read.
func (w *dupWalker) members(depth int) error {
	var seen map[string]int64 // the offset of the first name of each field
	for w.dec.More() {
		before := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotJSON, err)
		}
		name, _ := tok.(string)
		at := skipTo(w.data, before, '"')
		f, check := name, true
		if w.field != nil {
			f, check = w.field(w.path, name)
		}
		if check {
			if first, ok := seen[f]; ok {
				d := Duplicate{Object: slices.Clone(w.path), Name: name, Field: f, Offset: at, First: first}
				if !w.found(d) {
					return errStop
				}
			} else {
				if seen == nil {
					seen = make(map[string]int64)
				}
				seen[f] = at
			}
		}
		w.path = append(w.path, Step{Name: name, Index: -1})
		err = w.value(depth)
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// elements reads the elements of an array, the depth-th container, whose '[' has been read.
func (w *dupWalker) elements(depth int) error {
	for idx := 0; w.dec.More(); idx++ {
		w.path = append(w.path, Step{Index: idx})
		err := w.value(depth)
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// skipTo returns the offset of the first c at or after at: the token that the tokenizer read
// after the whitespace and separators from at on.
func skipTo(data []byte, at int64, c byte) int64 {
	for at < int64(len(data)) && data[at] != c {
		at++
	}
	return at
}
