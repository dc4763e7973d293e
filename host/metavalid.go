package host

import (
	"encoding/json"
	"math"
	"strconv"

	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"
)

// Validating a tool's schema against its draft's metaschema costs little,
// but the first validation of a process compiles the draft's metaschemas
// first: ≈1.5 ms of CPU for draft 2020-12, about a tenth of a whole
// `toolhost call` (issue 26, item 3). Most tools' schemas use a handful of
// keywords whose values are easy to check, so compileSchema asks
// metaValid first (jsonschema.Compiler.SkipMetaValidation), and only a
// schema it cannot vouch for is validated against the metaschema.
//
// metaValid answers true only when the metaschemas of both draft-07 and
// draft 2020-12 accept v: it checks each keyword it knows (the table
// below) as strictly as the stricter of the two, and answers false (ask
// the metaschema) for every other keyword either draft defines ($ref,
// $defs, pattern, if, prefixItems, ...), for a $schema that is not one of
// those two drafts' or not at the root, and for what it cannot judge
// cheaply (an enum of objects, a non-integer bound written as 1.0, depth
// beyond metaValidMaxDepth). Keywords that no draft defines are left
// unchecked, as both metaschemas leave them. TestMetaValidImpliesMetaschema
// and FuzzMetaValid check the implication against the metaschemas
// themselves; metaValid's false costs only time.
func metaValid(d *jsonschema.Draft, v any) bool {
	if d != jsonschema.Draft2020 && d != jsonschema.Draft7 {
		return false
	}
	if obj, ok := v.(map[string]any); ok {
		if s, ok := obj["$schema"]; ok && !knownDraftURL(s) {
			return false
		}
	}
	return plainSchema(v, 0)
}

// metaValidMaxDepth bounds metaValid's recursion: deeper schemas are left
// to the metaschema (whose validator has no such bound of its own, but the
// JSON decoder before it has).
const metaValidMaxDepth = 32

// knownDraftURL reports whether s is a $schema metaValid vouches for.
func knownDraftURL(s any) bool {
	switch s {
	case "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#",
		"http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#":
		return true
	}
	return false
}

// keyword is what metaValid checks of a keyword's value.
type keyword uint8

const (
	kwMetaschema    keyword = iota // left to the metaschema
	kwSchema                       // a schema
	kwSchemaArray                  // a non-empty array of schemas
	kwSchemaMap                    // an object whose values are schemas
	kwString                       // a string
	kwBool                         // a boolean
	kwArray                        // an array of anything
	kwAny                          // anything
	kwNumber                       // a number
	kwPositive                     // a number above 0
	kwNonNegInteger                // an integer ≥ 0 (canonicalInteger)
	kwType                         // a simple type, or a non-empty array of different ones
	kwEnum                         // see enumKeyword
	kwStringSet                    // an array of different strings
)

// schemaKeywords are the keywords of drafts 4, 6, 7, 2019-09 and 2020-12,
// and what metaValid checks of each.
var schemaKeywords = map[string]keyword{
	// core ($schema: at the root only, see plainSchema)
	"$schema": kwMetaschema, "$comment": kwString,
	"$id": kwMetaschema, "id": kwMetaschema, "$ref": kwMetaschema, "$anchor": kwMetaschema,
	"$dynamicRef": kwMetaschema, "$dynamicAnchor": kwMetaschema, "$recursiveRef": kwMetaschema,
	"$recursiveAnchor": kwMetaschema, "$vocabulary": kwMetaschema, "$defs": kwMetaschema, "definitions": kwMetaschema,
	// applicator
	"allOf": kwSchemaArray, "anyOf": kwSchemaArray, "oneOf": kwSchemaArray, "not": kwSchema,
	"items":      kwSchema, // draft-07's array form is not 2020-12's
	"properties": kwSchemaMap, "additionalProperties": kwSchema,
	"if": kwMetaschema, "then": kwMetaschema, "else": kwMetaschema, "dependentSchemas": kwMetaschema,
	"prefixItems": kwMetaschema, "additionalItems": kwMetaschema, "contains": kwMetaschema,
	"patternProperties": kwMetaschema, "propertyNames": kwMetaschema, "dependencies": kwMetaschema,
	"unevaluatedItems": kwMetaschema, "unevaluatedProperties": kwMetaschema,
	// validation
	"type": kwType, "enum": kwEnum, "const": kwAny, "multipleOf": kwPositive,
	"maximum": kwNumber, "exclusiveMaximum": kwNumber, "minimum": kwNumber, "exclusiveMinimum": kwNumber,
	"maxLength": kwNonNegInteger, "minLength": kwNonNegInteger, "maxItems": kwNonNegInteger,
	"minItems": kwNonNegInteger, "maxProperties": kwNonNegInteger, "minProperties": kwNonNegInteger,
	"uniqueItems": kwBool, "required": kwStringSet,
	"pattern":     kwMetaschema, // a regular expression: the metaschema's format check
	"maxContains": kwMetaschema, "minContains": kwMetaschema, "dependentRequired": kwMetaschema,
	// meta-data
	"title": kwString, "description": kwString, "default": kwAny, "examples": kwArray,
	"deprecated": kwBool, "readOnly": kwBool, "writeOnly": kwBool,
	// format, content
	"format": kwString, "contentEncoding": kwString, "contentMediaType": kwString, "contentSchema": kwMetaschema,
}

// plainSchema reports whether v is a boolean schema, or an object schema
// whose every keyword metaValid vouches for (see schemaKeywords); a
// $schema is allowed at depth 0 only (metaValid checks its value).
func plainSchema(v any, depth int) bool {
	if depth > metaValidMaxDepth {
		return false
	}
	switch v := v.(type) {
	case bool:
		return true
	case map[string]any:
		for k, kv := range v {
			kw, known := schemaKeywords[k]
			switch {
			case !known:
				// No draft defines it: no metaschema checks it.
			case k == "$schema" && depth == 0:
			case !checkKeyword(kw, kv, depth+1):
				return false
			}
		}
		return true
	}
	return false
}

// checkKeyword reports whether v is a value of a keyword of kind kw that
// both metaschemas accept.
func checkKeyword(kw keyword, v any, depth int) bool {
	switch kw {
	case kwSchema:
		return plainSchema(v, depth)
	case kwSchemaArray:
		return schemaArray(v, depth)
	case kwSchemaMap:
		return schemaMap(v, depth)
	case kwString:
		_, ok := v.(string)
		return ok
	case kwBool:
		_, ok := v.(bool)
		return ok
	case kwArray:
		_, ok := v.([]any)
		return ok
	case kwAny:
		return true
	case kwNumber:
		_, ok := number(v)
		return ok
	case kwPositive:
		f, ok := number(v)
		return ok && f > 0
	case kwNonNegInteger:
		n, ok := v.(json.Number)
		return ok && len(n) > 0 && n[0] != '-' && canonicalInteger(string(n))
	case kwType:
		return typeKeyword(v)
	case kwEnum:
		return enumKeyword(v)
	case kwStringSet:
		return stringSet(v)
	}
	return false // kwMetaschema
}

func schemaArray(v any, depth int) bool {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	for _, s := range a {
		if !plainSchema(s, depth) {
			return false
		}
	}
	return true
}

func schemaMap(v any, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, s := range m {
		if !plainSchema(s, depth) {
			return false
		}
	}
	return true
}

// simpleTypes are the values of "type" (both drafts' simpleTypes).
var simpleTypes = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true, "number": true, "object": true, "string": true}

func typeKeyword(v any) bool {
	switch v := v.(type) {
	case string:
		return simpleTypes[v]
	case []any:
		if len(v) == 0 {
			return false
		}
		seen := make(map[string]bool, len(v))
		for _, t := range v {
			s, ok := t.(string)
			if !ok || !simpleTypes[s] || seen[s] {
				return false
			}
			seen[s] = true
		}
		return true
	}
	return false
}

// enumKeyword accepts a non-empty array of strings, booleans, nulls and
// integers written in canonical form, all different (JSON Schema's
// equality: 1 and 1.0 are equal, so other numbers are left to the
// metaschema, as are objects and arrays).
func enumKeyword(v any) bool {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	seen := make(map[string]bool, len(a))
	for _, e := range a {
		var key string
		switch e := e.(type) {
		case nil:
			key = "n"
		case bool:
			key = "b" + strconv.FormatBool(e)
		case string:
			key = "s" + e
		case json.Number:
			if !canonicalInteger(string(e)) {
				return false
			}
			key = "i" + string(e)
		default:
			return false
		}
		if seen[key] {
			return false
		}
		seen[key] = true
	}
	return true
}

func stringSet(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	seen := make(map[string]bool, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

// canonicalInteger reports whether s is an integer in JSON with no sign
// (or "-" but not "-0"), fraction, exponent or leading zero.
func canonicalInteger(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// number returns v as a float64 if it is a JSON number (json.Number, as
// jsonschema.UnmarshalJSON decodes them) that parses to a finite value.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil && !math.IsInf(f, 0)
}
