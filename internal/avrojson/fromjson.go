package avrojson

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/hamba/avro/v2"
)

// FromJSON gives the JSON value v (numbers as json.Number) the Go types the Avro schema s
// is written from: int32 and int64 for int and long, float32 and float64 for float and double,
// []byte for bytes and fixed (from a string of code points 0 to 255, Avro's JSON encoding).
// path names the place for errors.
func FromJSON(s avro.Schema, v any, path string) (any, error) {
	fail := func() (any, error) {
		return nil, fmt.Errorf("%s: %s is not an Avro %s", cmp.Or(path, "value"), describeJSON(v), s.Type())
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return fail()
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, present := m[f.Name()]
			if !present {
				if f.HasDefault() {
					continue
				}
				fv = nil
			}
			x, err := FromJSON(f.Type(), fv, path+"."+f.Name())
			if err != nil {
				return nil, err
			}
			out[f.Name()] = x
		}
		return out, nil
	case *avro.ArraySchema:
		l, ok := v.([]any)
		if !ok {
			return fail()
		}
		out := make([]any, len(l))
		for i, e := range l {
			x, err := FromJSON(s.Items(), e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return fail()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			x, err := FromJSON(s.Values(), e, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil && s.Nullable() {
			return nil, nil
		}
		for _, t := range s.Types() {
			if t.Type() == avro.Null {
				continue
			}
			if x, err := FromJSON(t, v, path); err == nil {
				return x, nil
			}
		}
		return fail()
	case *avro.FixedSchema:
		b, err := avroBytes(v, fail)
		if err != nil || len(b.([]byte)) != s.Size() {
			return fail()
		}
		// hamba/avro takes a fixed as a byte array of exactly its size.
		arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf(b))
		return arr.Interface(), nil
	case *avro.EnumSchema:
		sym, ok := v.(string)
		if !ok || !slices.Contains(s.Symbols(), sym) {
			return fail()
		}
		return sym, nil
	}
	return avroPrimitiveFromJSON(s, v, fail)
}

// avroPrimitiveFromJSON is FromJSON for a schema of a primitive type; fail returns its
// error.
func avroPrimitiveFromJSON(s avro.Schema, v any, fail func() (any, error)) (any, error) {
	switch s.Type() {
	case avro.Null:
		if v != nil {
			return fail()
		}
		return nil, nil
	case avro.Boolean:
		if _, ok := v.(bool); !ok {
			return fail()
		}
		return v, nil
	case avro.String:
		if _, ok := v.(string); !ok {
			return fail()
		}
		return v, nil
	case avro.Bytes:
		return avroBytes(v, fail)
	case avro.Int, avro.Long:
		n, ok := v.(json.Number)
		if !ok {
			return fail()
		}
		i, err := n.Int64()
		if err != nil || s.Type() == avro.Int && int64(int32(i)) != i {
			return fail()
		}
		if s.Type() == avro.Int {
			return int32(i), nil
		}
		return i, nil
	case avro.Float, avro.Double:
		n, ok := v.(json.Number)
		if !ok {
			return fail()
		}
		f, err := n.Float64()
		if err != nil {
			return fail()
		}
		if s.Type() == avro.Float {
			return float32(f), nil
		}
		return f, nil
	}
	return v, nil
}

// avroBytes reads Avro's JSON encoding of bytes: a string whose code points are the bytes.
func avroBytes(v any, fail func() (any, error)) (any, error) {
	str, ok := v.(string)
	if !ok {
		return fail()
	}
	b := make([]byte, 0, len(str))
	for _, r := range str {
		if r > 255 {
			return fail()
		}
		b = append(b, byte(r))
	}
	return b, nil
}

// describeJSON names a JSON value for errors.
func describeJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "the number " + v.String()
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprint(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
