package avrojson

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Append appends v, decoded by hamba/avro with schema sch, as JSON: records as objects
// in the schema's field order, unions as the value of their branch (not wrapped in an object
// naming the branch), enums as their symbol, bytes and fixed as strings of the code points
// U+0000-U+00FF (Avro's JSON encoding of bytes), maps with their keys sorted, and logical
// types as the value they are written as (a timestamp-millis as its number of milliseconds, a
// date as its number of days), except decimals, as strings of their decimal value. A float
// that is NaN or infinite, which JSON has no number for, is the string "NaN", "Infinity" or
// "-Infinity". AWS does not document its JSON form of Avro; this is the form of Avro's own
// GenericData.toString, in valid JSON.
func Append(b []byte, sch avro.Schema, v any) ([]byte, error) {
	if ref, ok := sch.(*avro.RefSchema); ok {
		sch = ref.Schema()
	}
	switch sch.Type() {
	case avro.Null:
		return append(b, "null"...), nil
	case avro.Boolean:
		x, ok := v.(bool)
		if !ok {
			return nil, avroTypeError(sch, v)
		}
		return strconv.AppendBool(b, x), nil
	case avro.Int, avro.Long:
		return appendAvroInteger(b, sch, v)
	case avro.Float, avro.Double:
		return appendAvroFloat(b, sch, v)
	case avro.String, avro.Enum:
		x, ok := v.(string)
		if !ok {
			return nil, avroTypeError(sch, v)
		}
		return jsonscan.AppendString(b, x), nil
	case avro.Bytes, avro.Fixed:
		return appendAvroBytes(b, sch, v)
	case avro.Array:
		return appendAvroArray(b, sch.(*avro.ArraySchema), v)
	case avro.Map:
		return appendAvroMap(b, sch.(*avro.MapSchema), v)
	case avro.Record:
		return appendAvroRecord(b, sch.(*avro.RecordSchema), v)
	case avro.Union:
		return appendAvroUnion(b, sch.(*avro.UnionSchema), v)
	}
	return nil, fmt.Errorf("avro to JSON: unknown schema type %s", sch.Type())
}

func avroTypeError(sch avro.Schema, v any) error {
	return fmt.Errorf("avro to JSON: a %s decoded as %T", sch.Type(), v)
}

// logicalType is sch's logical type, or "".
func logicalType(sch avro.Schema) avro.LogicalType {
	if l, ok := sch.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return l.Logical().Type()
	}
	return ""
}

func appendAvroInteger(b []byte, sch avro.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case time.Time:
		switch logicalType(sch) {
		case avro.Date:
			return strconv.AppendInt(b, x.Unix()/86400, 10), nil
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return strconv.AppendInt(b, x.UnixMicro(), 10), nil
		default:
			return strconv.AppendInt(b, x.UnixMilli(), 10), nil
		}
	case time.Duration:
		if logicalType(sch) == avro.TimeMicros {
			return strconv.AppendInt(b, x.Microseconds(), 10), nil
		}
		return strconv.AppendInt(b, x.Milliseconds(), 10), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, rv.Uint(), 10), nil
	}
	return nil, avroTypeError(sch, v)
}

func appendAvroFloat(b []byte, sch avro.Schema, v any) ([]byte, error) {
	var f float64
	bits := 64
	switch x := v.(type) {
	case float32:
		f, bits = float64(x), 32
	case float64:
		f = x
	default:
		return nil, avroTypeError(sch, v)
	}
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...), nil
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...), nil
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...), nil
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits), nil
}

func appendAvroBytes(b []byte, sch avro.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case *big.Rat:
		scale := 0
		if l, ok := sch.(avro.LogicalTypeSchema); ok {
			if d, ok := l.Logical().(*avro.DecimalLogicalSchema); ok {
				scale = d.Scale()
			}
		}
		return jsonscan.AppendString(b, x.FloatString(scale)), nil
	case avro.LogicalDuration:
		return fmt.Appendf(b, `{"months":%d,"days":%d,"milliseconds":%d}`, x.Months, x.Days, x.Milliseconds), nil
	case []byte:
		return appendLatin1(b, x), nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
		raw := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(raw), rv)
		return appendLatin1(b, raw), nil
	}
	return nil, avroTypeError(sch, v)
}

// appendLatin1 writes raw as a JSON string of the code points U+0000-U+00FF, one per byte.
func appendLatin1(b, raw []byte) []byte {
	r := make([]rune, len(raw))
	for i, c := range raw {
		r[i] = rune(c)
	}
	return jsonscan.AppendString(b, string(r))
}

func appendAvroArray(b []byte, sch *avro.ArraySchema, v any) ([]byte, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, avroTypeError(sch, v)
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = Append(b, sch.Items(), it); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendAvroMap(b []byte, sch *avro.MapSchema, v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, avroTypeError(sch, v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonscan.AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = Append(b, sch.Values(), m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendAvroRecord(b []byte, sch *avro.RecordSchema, v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, avroTypeError(sch, v)
	}
	b = append(b, '{')
	for i, f := range sch.Fields() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonscan.AppendString(b, f.Name())
		b = append(b, ':')
		var err error
		if b, err = Append(b, f.Type(), m[f.Name()]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendAvroUnion writes the value of the union's branch. hamba/avro decodes a union into an
// any as nil (null), as the value itself for a branch of a primitive type (logical types and
// bytes included), or as a map of one entry, the branch's name to its value, for an array,
// map, record, enum or fixed branch.
func appendAvroUnion(b []byte, sch *avro.UnionSchema, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, val := range m {
			for _, t := range sch.Types() {
				if wrappedInUnion(t) && avroTypeName(t) == name {
					return Append(b, t, val)
				}
			}
		}
	}
	for _, t := range sch.Types() {
		if t.Type() == avro.Null || wrappedInUnion(t) {
			continue
		}
		if out, err := Append(b, t, v); err == nil {
			return out, nil
		}
	}
	return nil, avroTypeError(sch, v)
}

// wrappedInUnion reports whether hamba/avro decodes a union's branch of type sch into a map
// naming the branch.
func wrappedInUnion(sch avro.Schema) bool {
	if ref, ok := sch.(*avro.RefSchema); ok {
		sch = ref.Schema()
	}
	switch sch.Type() {
	case avro.Array, avro.Map, avro.Record, avro.Enum, avro.Fixed:
		return true
	}
	return false
}

// avroTypeName is the name hamba/avro gives a union's branch: a named type's full name, else
// the type, with its logical type after a dot.
func avroTypeName(sch avro.Schema) string {
	if ref, ok := sch.(*avro.RefSchema); ok {
		sch = ref.Schema()
	}
	if n, ok := sch.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(sch.Type())
	if lt := logicalType(sch); lt != "" {
		name += "." + string(lt)
	}
	return name
}
