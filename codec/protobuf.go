package codec

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Protobuf returns the codec of Protobuf messages of the generated type M (a pointer such as
// *orderpb.Order), through google.golang.org/protobuf: Decode unmarshals the payload into a new
// M, Encode marshals v ([FormatProtobuf]).
//
// The message indexes a Confluent or Glue producer writes before the message (which message
// of its .proto file the value is) are taken off by the Deserializer and left in
// [Schema.MessageIndexes]; the value is decoded as an M whatever they say, since the writer's
// file may be laid out differently from the one M was generated from. Messages and groups
// nest at most 10,000 levels deep (protobuf's default recursion limit): a value nested
// deeper is an error that says so. On the producer side,
// [Serializer] writes the indexes of M in its own file.
func Protobuf[M proto.Message]() Codec[M] {
	var zero M
	c := &protoCodec[M]{mt: zero.ProtoReflect().Type()}
	if t := reflect.TypeFor[M](); t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		// A generated message (a pointer to its struct): a new one is a new struct, as
		// mt.New makes it, without the message state and reflection wrappers that
		// mt.New().Interface() goes through for every record.
		c.elem = t.Elem()
	}
	return c
}

// ProtobufDynamic returns the codec of Protobuf messages described by md, decoded into
// dynamic messages: for a schema known only at run time (a .proto compiled by the program, a
// descriptor set), as `klt event decode` does. md is measured first, its message fields
// replaced by the messages they name (see [SchemaLimitError]): when it is over a limit, the
// codec's Decode and Encode return that *SchemaLimitError, found once.
func ProtobufDynamic(md protoreflect.MessageDescriptor) Codec[*dynamicpb.Message] {
	return &protoCodec[*dynamicpb.Message]{mt: dynamicpb.NewMessageType(md), err: measureProto(md).check(FormatProtobuf, string(md.FullName()))}
}

type protoCodec[M proto.Message] struct {
	mt   protoreflect.MessageType
	elem reflect.Type // the struct M points to, for a generated M; nil for dynamic messages
	err  error        // a dynamic message's *SchemaLimitError
}

// new returns a new, empty M.
func (c *protoCodec[M]) new() M {
	if c.elem != nil {
		return reflect.New(c.elem).Interface().(M)
	}
	return c.mt.New().Interface().(M)
}

func (*protoCodec[M]) Format() string { return FormatProtobuf }

// protoMaxDepth is how deep messages (and groups) may nest: protobuf's default.
const protoMaxDepth = protowire.DefaultRecursionLimit

var protoUnmarshal = proto.UnmarshalOptions{RecursionLimit: protoMaxDepth}

func (c *protoCodec[M]) Decode(_ context.Context, payload []byte, _ *Schema) (M, error) {
	if c.err != nil {
		var zero M
		return zero, c.err
	}
	m := c.new()
	if err := protoUnmarshal.Unmarshal(payload, m); err != nil {
		var zero M
		// protobuf's error does not give the limit, and is no value to test for.
		if strings.Contains(err.Error(), "exceeded maximum recursion depth") {
			return zero, fmt.Errorf("protobuf: %s: nested more than %d levels deep: %w", c.mt.Descriptor().FullName(), protoMaxDepth, err)
		}
		return zero, fmt.Errorf("protobuf: %s: %w", c.mt.Descriptor().FullName(), err)
	}
	return m, nil
}

func (c *protoCodec[M]) Encode(_ context.Context, v M, _ *Schema) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	// Deterministic: the same message gives the same bytes every time (map entries and the
	// fields of dynamic messages in a fixed order), so fixtures and tests can compare bytes.
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("protobuf: %s: %w", c.mt.Descriptor().FullName(), err)
	}
	return b, nil
}

// descriptor gives the Serializer the message type, to write its indexes.
func (c *protoCodec[M]) descriptor() protoreflect.MessageDescriptor { return c.mt.Descriptor() }

// protoDescribed is implemented by the Protobuf codecs.
type protoDescribed interface {
	descriptor() protoreflect.MessageDescriptor
}

// MessageIndexesOf returns the message indexes a producer writes for a value of message type md
// in the wire format w, as the registries' serializers compute them: for WireConfluent the
// path from the file's top-level messages down to md ([0] is the first message), for WireGlue
// md's position among all the messages of its file, nested ones included, sorted by full name.
// WireNone has none (nil).
func MessageIndexesOf(w Wire, md protoreflect.MessageDescriptor) []int {
	switch w {
	case WireConfluent:
		return confluentIndexes(md)
	case WireGlue:
		return []int{glueIndex(md)}
	}
	return nil
}

// confluentIndexes returns the Confluent message indexes of md: the path from its file's
// top-level messages down to it.
func confluentIndexes(md protoreflect.MessageDescriptor) []int {
	var path []int
	for d := protoreflect.Descriptor(md); ; {
		m, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		path = append(path, m.Index())
		d = m.Parent()
	}
	slices.Reverse(path)
	return path
}

// glueIndex returns the Glue serializer's message index of md: its position among all the
// messages of its file (top-level and nested), sorted by full name.
func glueIndex(md protoreflect.MessageDescriptor) int {
	var names []string
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			names = append(names, string(ms.Get(i).FullName()))
			walk(ms.Get(i).Messages())
		}
	}
	walk(md.ParentFile().Messages())
	sort.Strings(names)
	i, _ := slices.BinarySearch(names, string(md.FullName()))
	return i
}
