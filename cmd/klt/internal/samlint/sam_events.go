package samlint

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// samEventsJSON is, for each event source type of an AWS::Serverless::Function, the
// properties the SAM transform accepts and the kind it wants of each, as the translator
// declares them (schema/README.md).
//
//go:embed schema/sam-events.json
var samEventsJSON []byte

// samEventKinds maps the kinds of sam-events.json to what checkKinds checks.
var samEventKinds = map[string]samPropKind{
	"any": samPassThrough, "int": samInt, "bool": samBool, "list": samList, "dict": samMap, "str": samString,
}

// loadSAMEvents reads the vendored event properties once: event type -> property -> kind.
var loadSAMEvents = sync.OnceValues(func() (map[string]map[string]samPropKind, error) {
	var raw map[string]map[string]string
	if err := json.Unmarshal(samEventsJSON, &raw); err != nil {
		return nil, fmt.Errorf("vendored SAM event properties: %w", err)
	}
	out := make(map[string]map[string]samPropKind, len(raw))
	for typ, props := range raw {
		out[typ] = make(map[string]samPropKind, len(props))
		for name, k := range props {
			kind, ok := samEventKinds[k]
			if !ok {
				return nil, fmt.Errorf("vendored SAM event properties: %s.%s has the unknown kind %q", typ, name, k)
			}
			out[typ][name] = kind
		}
	}
	return out, nil
})

// functionEventsDef is the definition of AWS::Serverless::Function's Properties in the SAM
// schema, whose Events lists the event shapes.
const functionEventsDef = "samtranslator__internal__schema_source__aws_serverless_function__Properties"

// acceptTransformEvents adds to the SAM schema doc (as the validator read it) every property
// of a function event that the transform accepts and the schema leaves out, as a value of any
// shape: the schema is stricter than the transform (a SelfManagedKafka event's
// DestinationConfig), and klt lint accepts what `sam deploy` accepts. checkKinds checks their
// kinds as the transform does. It fails when the schema is not shaped as it expects, so that
// a re-vendored schema cannot silently drop the properties.
func acceptTransformEvents(doc any, events map[string]map[string]samPropKind) error {
	defs, _ := mapAt(doc, "definitions")
	anyOf, _ := mapAt(defs, functionEventsDef, "properties", "Events", "additionalProperties")
	refs, _ := anyOf["anyOf"].([]any)
	if len(refs) == 0 {
		return fmt.Errorf("SAM schema: no event shapes at definitions.%s.properties.Events", functionEventsDef)
	}
	done := map[string]bool{}
	for _, r := range refs {
		ev, err := refDef(defs, r)
		if err != nil {
			return err
		}
		typeSchema, _ := mapAt(ev, "properties", "Type")
		enum, _ := typeSchema["enum"].([]any)
		if len(enum) != 1 {
			return fmt.Errorf("SAM schema: an event shape whose Type is not one name: %v", typeSchema)
		}
		typ, _ := enum[0].(string)
		propsSchema, _ := mapAt(ev, "properties", "Properties")
		allOf, _ := propsSchema["allOf"].([]any)
		if len(allOf) != 1 {
			return fmt.Errorf("SAM schema: the Properties of event type %s are not one $ref", typ)
		}
		def, err := refDef(defs, allOf[0])
		if err != nil {
			return err
		}
		props, ok := def["properties"].(map[string]any)
		if !ok {
			return fmt.Errorf("SAM schema: the Properties of event type %s list no properties", typ)
		}
		for name := range events[typ] {
			if _, ok := props[name]; !ok {
				props[name] = map[string]any{}
			}
		}
		done[typ] = true
	}
	for typ := range events {
		if !done[typ] {
			return fmt.Errorf("SAM schema: no shape for the event type %s, which the transform accepts", typ)
		}
	}
	return nil
}

// mapAt follows keys from v through nested objects.
func mapAt(v any, keys ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	for _, k := range keys {
		if !ok {
			return nil, false
		}
		m, ok = m[k].(map[string]any)
	}
	return m, ok
}

// refDef returns the definition a {"$ref": "#/definitions/NAME"} names.
func refDef(defs map[string]any, r any) (map[string]any, error) {
	m, _ := r.(map[string]any)
	ref, _ := m["$ref"].(string)
	name, ok := strings.CutPrefix(ref, "#/definitions/")
	def, found := defs[name].(map[string]any)
	if !ok || !found {
		return nil, fmt.Errorf("SAM schema: %q names no definition", ref)
	}
	return def, nil
}
