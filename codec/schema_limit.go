package codec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Limits on a schema, measured before anything is built from it (see [CheckSchema]). A schema
// of a few kilobytes can name a type twice in each of 30 nested types: 2^30 fields once
// expanded, which hamba/avro's decoder builder (and a JSON Schema validator trying each
// branch of an anyOf) walks one by one, for minutes, with no context to stop it. The limits
// are far above what the schemas of real topics need (the largest schema in the project's
// fixtures measures 16 nodes, and the SAM specification's JSON Schema, 748 KB, the largest at
// hand, measures 3,664 nodes, 23 levels and 446 alternatives), and low enough that what is
// built from a schema at the limits takes well under a second: hamba/avro built the decoders
// of 2^21 nodes in 1.8 s, and a JSON Schema validator took 17 s to try the 2^20 branches of
// nested anyOfs.
const (
	// schemaMaxSize bounds a schema's expanded size: its nodes (types, fields' types,
	// subschemas) counted as if every reference to a named type (Avro), a message type
	// (Protobuf) or a $ref (JSON Schema) were replaced by what it names; a reference back
	// to a type that holds it (recursion) counts once.
	schemaMaxSize = 1 << 16
	// schemaMaxDepth bounds how deep a schema nests, expanded in the same way.
	schemaMaxDepth = 256
	// schemaMaxAlternatives bounds the alternatives of the expanded schema: the branches of
	// its Avro unions, JSON Schema anyOf and oneOf, Protobuf oneofs, counted as its size is.
	schemaMaxAlternatives = 1 << 13
	// schemaCountCap is where counting stops: past it, a count says "more than this", and
	// measuring stays linear in the schema's text whatever it expands to.
	schemaCountCap = 1 << 40
)

// Names of the limits, in a [SchemaLimitError].
const (
	limitSize         = "expanded size"
	limitDepth        = "depth"
	limitAlternatives = "alternatives"
)

// A SchemaLimitError is the error of a schema over one of the limits measured before a decoder
// or validator is built from it: its expanded size (nodes, every reference to a named type or
// $ref replaced by what it names, 65,536 at most), its depth (256 levels at most, expanded
// likewise) or its alternatives (union, anyOf, oneOf and oneof branches, expanded likewise,
// 8,192 at most). A codec keeps it for the schema's ID (or the schema it was given), so a
// record of that schema costs nothing more than the lookup: the schema is never measured or
// built again. It is a *[DecodeError]'s cause for a record of that schema.
type SchemaLimitError struct {
	Format   string // FormatAvro, FormatProtobuf or FormatJSON
	ID       string // the schema's ID ("" for AvroSchema's), or ProtobufDynamic's message name
	Limit    string // "expanded size", "depth" or "alternatives"
	Max      int64  // the limit
	Measured int64  // what the schema measures (at least; counting stops at 2^40)
}

func (e *SchemaLimitError) Error() string {
	id := ""
	if e.ID != "" {
		id = " " + e.ID
	}
	return fmt.Sprintf("codec: %s schema%s: %s %d is over the limit of %d", e.Format, id, e.Limit, e.Measured, e.Max)
}

// CheckSchema measures the schema s (its Text, in the language its Format names: Avro JSON, a
// .proto file, JSON Schema) against the limits a *[SchemaLimitError] states, and returns that
// error when it is over one, or an error saying why it cannot be measured (a text that does
// not parse). It builds nothing from s, and takes time linear in its text. The codecs check
// every schema they are given or fetch, once per schema; CheckSchema is for a program that
// builds a decoder or validator of its own from a schema it does not control (as the mapping
// emulator does with a registry's), to check it first.
//
// A .proto file is measured for how deep its declarations nest; what its messages expand to
// is measured by [ProtobufDynamic] on the compiled descriptor.
func CheckSchema(s *Schema) error {
	if s == nil {
		return errors.New("codec: CheckSchema(nil): no schema")
	}
	switch s.Format {
	case FormatAvro:
		sch, err := parseAvro(s.Text)
		if err != nil {
			return fmt.Errorf("codec: Avro schema %s does not parse: %w", s.ID, err)
		}
		return measureAvro(sch).check(FormatAvro, s.ID)
	case FormatJSON:
		m, err := measureJSONSchema(s.Text)
		if err != nil {
			return fmt.Errorf("codec: JSON Schema %s: %w", s.ID, err)
		}
		return m.check(FormatJSON, s.ID)
	case FormatProtobuf:
		return protoTextDepth(s.Text).check(FormatProtobuf, s.ID)
	}
	return fmt.Errorf("codec: schema %s: format %q: want %s, %s or %s", s.ID, s.Format, FormatAvro, FormatProtobuf, FormatJSON)
}

// measure is what a schema measures: expanded size, depth, alternatives.
type measure struct {
	size, depth, alts int64
}

// check returns the *SchemaLimitError of the first limit m is over, or nil.
func (m measure) check(format, id string) error {
	for _, l := range []struct {
		name          string
		measured, max int64
	}{{limitDepth, m.depth, schemaMaxDepth}, {limitSize, m.size, schemaMaxSize}, {limitAlternatives, m.alts, schemaMaxAlternatives}} {
		if l.measured > l.max {
			return &SchemaLimitError{Format: format, ID: id, Limit: l.name, Max: l.max, Measured: l.measured}
		}
	}
	return nil
}

// add returns a+b, stopping at schemaCountCap.
func add(a, b int64) int64 {
	return min(a+b, schemaCountCap)
}

// measureAvro measures a parsed Avro schema, each named type once (memoised): a reference to
// a named type counts what the type expands to, a reference to a record that holds it counts
// one.
func measureAvro(s avro.Schema) measure {
	a := avroMeasure{done: map[avro.NamedSchema]measure{}, open: map[avro.NamedSchema]bool{}}
	return a.of(s)
}

type avroMeasure struct {
	done  map[avro.NamedSchema]measure
	open  map[avro.NamedSchema]bool // named types whose fields are being measured
	level int                       // how deep of is
}

func (a *avroMeasure) of(s avro.Schema) measure {
	m := measure{size: 1, depth: 1}
	if a.level > schemaMaxDepth {
		// Over the depth limit already (the levels above count it): no deeper, so that
		// measuring a chain of 100,000 references does not recurse 100,000 times.
		return m
	}
	a.level++
	defer func() { a.level-- }()
	switch s := s.(type) {
	case *avro.RefSchema:
		return a.of(s.Schema())
	case *avro.RecordSchema:
		if a.open[s] {
			return m // recursion: the decoder refers back, it does not expand again
		}
		if d, ok := a.done[s]; ok {
			return d
		}
		a.open[s] = true
		for _, f := range s.Fields() {
			m = m.with(a.of(f.Type()))
		}
		delete(a.open, s)
		a.done[s] = m
	case *avro.ArraySchema:
		m = m.with(a.of(s.Items()))
	case *avro.MapSchema:
		m = m.with(a.of(s.Values()))
	case *avro.UnionSchema:
		for _, t := range s.Types() {
			m = m.with(a.of(t))
			m.alts = add(m.alts, 1)
		}
	}
	return m
}

// with adds child, a node one level below m, to m.
func (m measure) with(child measure) measure {
	return measure{size: add(m.size, child.size), depth: max(m.depth, child.depth+1), alts: add(m.alts, child.alts)}
}

// protoTextDepth measures how deep the declarations of a .proto file nest (braces, brackets
// and parentheses outside strings and comments): protocompile's parser and linker recurse
// through them.
func protoTextDepth(text string) measure {
	var depth, deepest int64
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '{', '[', '(', '<':
			depth++
			deepest = max(deepest, depth)
		case '}', ']', ')', '>':
			depth--
		case '"', '\'':
			for i++; i < len(text) && text[i] != c && text[i] != '\n'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '/':
			switch {
			case strings.HasPrefix(text[i:], "//"):
				if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
					i += j
				} else {
					i = len(text)
				}
			case strings.HasPrefix(text[i:], "/*"):
				if j := strings.Index(text[i+2:], "*/"); j >= 0 {
					i += j + 3
				} else {
					i = len(text)
				}
			}
		}
	}
	return measure{depth: deepest}
}

// measureProto measures a Protobuf message descriptor: its fields counted with every message
// field replaced by the message type it names, each message type measured once (memoised), a
// field of a type that holds it (recursion) counting one; the fields of real oneofs are its
// alternatives.
func measureProto(md protoreflect.MessageDescriptor) measure {
	p := protoMeasure{done: map[protoreflect.FullName]measure{}, open: map[protoreflect.FullName]bool{}}
	return p.of(md)
}

type protoMeasure struct {
	done  map[protoreflect.FullName]measure
	open  map[protoreflect.FullName]bool
	level int
}

func (p *protoMeasure) of(md protoreflect.MessageDescriptor) measure {
	m := measure{size: 1, depth: 1}
	name := md.FullName()
	if p.open[name] || p.level > schemaMaxDepth {
		return m
	}
	if d, ok := p.done[name]; ok {
		return d
	}
	p.open[name] = true
	p.level++
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		fm := measure{size: 1, depth: 1}
		if sub := f.Message(); sub != nil {
			fm = p.of(sub)
		}
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			fm.alts = add(fm.alts, 1)
		}
		m = m.with(fm)
	}
	p.level--
	delete(p.open, name)
	p.done[name] = m
	return m
}
