package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// measureJSONSchema measures a JSON Schema document before any validator is compiled from it:
// its subschemas counted with every $ref (and $dynamicRef, $recursiveRef) replaced by the
// subschema it names, each named subschema measured once (memoised), a reference back to a
// subschema being measured (recursion) counting one. References resolve within the document,
// as the mapping's validator resolves them (it loads nothing): JSON pointers ("#/$defs/a"),
// anchors ("#a", $anchor, a draft-7 "$id": "#a") and the $id of an embedded resource,
// relative to the base URI of the resource they are in. A reference to a draft's
// meta-schema counts one; any other that does not resolve in the document is an error: it
// cannot be measured, and a validator that loads nothing could not compile it either.
func measureJSONSchema(text string) (measure, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return measure{}, fmt.Errorf("does not parse: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return measure{}, errors.New("does not parse: data after the document")
	}
	j := &jsonMeasure{
		resources: map[string]any{},
		anchors:   map[string]any{},
		done:      map[uintptr]measure{},
		open:      map[uintptr]bool{},
		base:      map[uintptr]*url.URL{},
	}
	root, _ := url.Parse("urn:klt:schema")
	j.index(doc, root)
	return j.of(doc, root)
}

// jsonMeasure measures a JSON Schema document. A subschema object is known by its map's
// address, so one reached twice (by its place and by a $ref) is measured once.
type jsonMeasure struct {
	resources map[string]any // absolute URI (no fragment) -> the resource's root
	anchors   map[string]any // absolute URI#anchor -> subschema
	done      map[uintptr]measure
	open      map[uintptr]bool // subschemas being measured
	base      map[uintptr]*url.URL
	level     int // how deep of is
}

// identity is the address of obj's map.
func identity(obj map[string]any) uintptr { return reflect.ValueOf(obj).Pointer() }

// Keywords whose value is a subschema, an array of subschemas, or an object of subschemas.
var (
	jsonSchemaOne = []string{"additionalItems", "additionalProperties", "contains", "contentSchema",
		"else", "if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	jsonSchemaMany = []string{"allOf", "anyOf", "oneOf", "items", "prefixItems"}
	jsonSchemaMap  = []string{"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"}
)

// index records the resources ($id) and anchors of the document, and each subschema's base
// URI.
func (j *jsonMeasure) index(v any, base *url.URL) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	id, ok := obj["$id"].(string)
	if !ok {
		id, _ = obj["id"].(string) // draft 4
	}
	if strings.HasPrefix(id, "#") { // draft 6 and 7: a plain-name fragment is an anchor
		j.anchors[withFragment(base, id[1:])] = obj
	} else if id != "" {
		if u, err := base.Parse(id); err == nil {
			u.Fragment, u.RawFragment = "", ""
			base = u
			j.resources[u.String()] = obj
		}
	}
	if _, ok := j.resources[base.String()]; !ok {
		j.resources[base.String()] = obj
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if a, ok := obj[k].(string); ok {
			j.anchors[withFragment(base, a)] = obj
		}
	}
	j.base[identity(obj)] = base
	j.children(obj, func(_ string, c any) { j.index(c, base) })
}

// withFragment is base#frag, as a map key.
func withFragment(base *url.URL, frag string) string {
	u := *base
	u.Fragment, u.RawFragment = frag, ""
	return u.String()
}

// children calls f with each subschema of obj and the keyword it is under.
func (j *jsonMeasure) children(obj map[string]any, f func(keyword string, c any)) {
	for _, k := range jsonSchemaOne {
		if c, ok := obj[k]; ok {
			if _, isArray := c.([]any); !isArray {
				f(k, c)
			}
		}
	}
	for _, k := range jsonSchemaMany {
		if cs, ok := obj[k].([]any); ok {
			for _, c := range cs {
				f(k, c)
			}
		}
	}
	for _, k := range jsonSchemaMap {
		if cs, ok := obj[k].(map[string]any); ok {
			for _, c := range cs {
				if _, isArray := c.([]any); !isArray { // dependencies: a list of names
					f(k, c)
				}
			}
		}
	}
}

// of measures the subschema v.
func (j *jsonMeasure) of(v any, base *url.URL) (measure, error) {
	m := measure{size: 1, depth: 1}
	obj, ok := v.(map[string]any)
	if !ok {
		return m, nil // true, false, or not a schema
	}
	id := identity(obj)
	if j.open[id] || j.level > schemaMaxDepth {
		// Recursion, or over the depth limit already (the levels above count it).
		return m, nil
	}
	j.level++
	defer func() { j.level-- }()
	if d, ok := j.done[id]; ok {
		return d, nil
	}
	outer := base // draft 7 and before resolve a $ref beside an $id against the outer base
	if b := j.base[id]; b != nil {
		base = b
	}
	j.open[id] = true
	defer delete(j.open, id)
	var err error
	j.children(obj, func(k string, c any) {
		if err != nil || k == "$defs" || k == "definitions" {
			return // definitions count where they are referred to
		}
		var cm measure
		if cm, err = j.of(c, base); err == nil {
			m = m.with(cm)
			if k == "anyOf" || k == "oneOf" {
				m.alts = add(m.alts, 1)
			}
		}
	})
	if err != nil {
		return measure{}, err
	}
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		ref, ok := obj[k].(string)
		if !ok {
			continue
		}
		target, err := j.resolve(ref, base)
		if err != nil && outer != base {
			target, err = j.resolve(ref, outer)
		}
		if err != nil {
			return measure{}, fmt.Errorf("%s %q: %w", k, ref, err)
		}
		if target == nil {
			continue // a meta-schema
		}
		tm, err := j.of(target, base)
		if err != nil {
			return measure{}, err
		}
		m = m.with(tm)
	}
	j.done[id] = m
	return m, nil
}

// resolve returns the subschema ref names, relative to base, or nil for a draft's
// meta-schema.
func (j *jsonMeasure) resolve(ref string, base *url.URL) (any, error) {
	u, err := base.Parse(ref)
	if err != nil {
		return nil, err
	}
	if u.Host == "json-schema.org" && (u.Scheme == "http" || u.Scheme == "https") {
		return nil, nil
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	root, ok := j.resources[u.String()]
	if !ok {
		return nil, errors.New("names nothing in the document (nothing is loaded from elsewhere)")
	}
	if frag == "" {
		return root, nil
	}
	if !strings.HasPrefix(frag, "/") {
		a, ok := j.anchors[withFragment(u, frag)]
		if !ok {
			return nil, fmt.Errorf("no anchor %q in the document", frag)
		}
		return a, nil
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no %q in the document", frag)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no %q in the document", frag)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("no %q in the document", frag)
		}
	}
	return cur, nil
}
