package search

import (
	"encoding/json"
	"maps"
	"slices"
)

// ParamsOf returns the parameters of a tool's inputSchema (any value that
// encodes to a JSON Schema object: a map, json.RawMessage, a
// *jsonschema.Schema): its properties, sorted by name, with their
// descriptions (or titles), and those of object-valued properties one level
// down as "outer.inner". At most MaxParams; a schema that does not encode
// or has no properties gives none.
func ParamsOf(schema any) []Param {
	var raw []byte
	switch s := schema.(type) {
	case nil:
		return nil
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	default:
		b, err := json.Marshal(schema)
		if err != nil {
			return nil
		}
		raw = b
	}
	var root struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	var out []Param
	for _, name := range slices.Sorted(maps.Keys(root.Properties)) {
		if len(out) >= MaxParams {
			break
		}
		var p prop
		_ = json.Unmarshal(root.Properties[name], &p) // a boolean schema has no text
		out = append(out, Param{Name: name, Description: p.text()})
		for _, inner := range slices.Sorted(maps.Keys(p.Properties)) {
			if len(out) >= MaxParams {
				break
			}
			var q prop
			_ = json.Unmarshal(p.Properties[inner], &q)
			out = append(out, Param{Name: name + "." + inner, Description: q.text()})
		}
	}
	return out
}

// prop is the part of a property's schema ParamsOf reads.
type prop struct {
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	Properties  map[string]json.RawMessage `json:"properties"`
}

func (p prop) text() string {
	if p.Description != "" {
		return p.Description
	}
	return p.Title
}
