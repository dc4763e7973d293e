package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"
)

// checkMetaValid compiles doc twice, with metaValid asked first and with the
// metaschema alone, and fails if metaValid vouched for a schema the
// metaschema refuses, or if the two compilations disagree. It reports
// whether metaValid vouched for doc.
func checkMetaValid(t testing.TB, name string, doc []byte) (vouched bool) {
	t.Helper()
	compile := func(skip bool) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(noLoader{})
		if skip {
			c.SkipMetaValidation(func(d *jsonschema.Draft, v any) bool {
				ok := metaValid(d, v)
				vouched = vouched || ok
				return ok
			})
		}
		if err := c.AddResource("toolhost:///t/inputSchema.json", v); err != nil {
			return err
		}
		_, err = c.Compile("toolhost:///t/inputSchema.json")
		return err
	}
	withSkip, meta := compile(true), compile(false)
	var sve *jsonschema.SchemaValidationError
	if vouched && errors.As(meta, &sve) {
		t.Fatalf("%s: metaValid vouched for a schema its metaschema refuses: %v\n%s", name, meta, doc)
	}
	if (withSkip == nil) != (meta == nil) {
		t.Fatalf("%s: compiled with metaValid: %v; with the metaschema: %v\n%s", name, withSkip, meta, doc)
	}
	return vouched
}

// TestMetaValidImpliesMetaschema: every schema metaValid vouches for, the
// metaschema of its draft accepts, and compiles as it does without
// metaValid; hand-picked cases on both sides of each check.
func TestMetaValidImpliesMetaschema(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{`{}`, true},
		{`true`, true},
		{`{"type":"object","properties":{"text":{"type":"string","description":"d"}},"required":["text"],"additionalProperties":false}`, true},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":["integer","null"],"minimum":0}}}`, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","items":{"enum":["a","b",1,null,true]},"minItems":1}`, true},
		{`{"anyOf":[{"type":"string"},{"type":"number","multipleOf":0.5}],"x-unknown":{"type":5}}`, true},
		{`{"properties":{"$ref":{"const":{"a":1}},"pattern":{"default":[1]}}}`, true}, // property names, not keywords
		{`{"type":"nope"}`, false},
		{`{"type":[]}`, false},
		{`{"type":["string","string"]}`, false},
		{`{"required":["a","a"]}`, false},
		{`{"required":"a"}`, false},
		{`{"enum":[]}`, false},
		{`{"enum":[1,1.0]}`, false},
		{`{"enum":[{"a":1}]}`, false},
		{`{"minLength":-1}`, false},
		{`{"minLength":1.0}`, false},
		{`{"minLength":"1"}`, false},
		{`{"multipleOf":0}`, false},
		{`{"multipleOf":-2}`, false},
		{`{"items":[{"type":"string"}]}`, false},
		{`{"anyOf":[]}`, false},
		{`{"properties":{"a":{"type":"nope"}}}`, false},
		{`{"properties":[]}`, false},
		{`{"pattern":"^a"}`, false},
		{`{"$ref":"#/$defs/a","$defs":{"a":{}}}`, false},
		{`{"$schema":"http://json-schema.org/draft-04/schema#"}`, false},
		{`{"$schema":"https://example.com/custom"}`, false},
		{`{"properties":{"a":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`, false},
		{`{"title":5}`, false},
		{`{"deprecated":"yes"}`, false},
		{`{"examples":{}}`, false},
		{`5`, false},
		{strings.Repeat(`{"not":`, metaValidMaxDepth+2) + `{}` + strings.Repeat(`}`, metaValidMaxDepth+2), false},
	} {
		if got := checkMetaValid(t, c.doc, []byte(c.doc)); got != c.want {
			t.Errorf("metaValid(%s) = %v, want %v", c.doc, got, c.want)
		}
	}
}

// TestMetaValidCatalogue: the same on the 324 real tools of
// testdata/catalogue; it logs how many metaValid vouches for.
func TestMetaValidCatalogue(t *testing.T) {
	b, err := os.ReadFile("../testdata/catalogue/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name         string          `json:"name"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	n, vouched := 0, 0
	for _, tool := range tools {
		for _, s := range []json.RawMessage{tool.InputSchema, tool.OutputSchema} {
			if len(s) == 0 || string(s) == "null" {
				continue
			}
			n++
			if checkMetaValid(t, tool.Name, s) {
				vouched++
			}
		}
	}
	t.Logf("metaValid vouches for %d of %d schemas", vouched, n)
	if vouched < n/2 {
		t.Errorf("metaValid vouches for %d of %d real schemas: its keyword table misses common ones", vouched, n)
	}
}

// randomSchema builds a schema of up to depth levels from every keyword
// of schemaKeywords and a few no draft defines, each with a value that is
// often of its kind and often not.
func randomSchema(r *rand.Rand, depth int) any {
	if r.IntN(8) == 0 {
		return r.IntN(2) == 0
	}
	// Mostly keywords metaValid checks, so that it vouches often.
	var checked, others []string
	for k, kw := range schemaKeywords {
		if kw == kwMetaschema {
			others = append(others, k)
		} else {
			checked = append(checked, k)
		}
	}
	slices.Sort(checked)
	slices.Sort(others)
	others = append(others, "x-extra", "nullable", "discriminator")
	m := map[string]any{}
	for range r.IntN(4) {
		k := checked[r.IntN(len(checked))]
		if r.IntN(8) == 0 {
			k = others[r.IntN(len(others))]
		}
		m[k] = randomValue(r, schemaKeywords[k], depth)
	}
	return m
}

func randomValue(r *rand.Rand, kw keyword, depth int) any {
	if depth <= 0 || r.IntN(6) == 0 {
		return randomJSON(r)
	}
	switch kw {
	case kwSchema:
		return randomSchema(r, depth-1)
	case kwSchemaArray:
		a := make([]any, r.IntN(3))
		for i := range a {
			a[i] = randomSchema(r, depth-1)
		}
		return a
	case kwSchemaMap:
		m := map[string]any{}
		for i := range r.IntN(3) {
			m["p"+strconv.Itoa(i)] = randomSchema(r, depth-1)
		}
		return m
	case kwType:
		types := []string{"string", "null", "nope"}
		if r.IntN(3) == 0 {
			return types[r.IntN(len(types))]
		}
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = types[r.IntN(len(types))]
		}
		return a
	case kwEnum, kwStringSet:
		// Few values, so that some repeat (1 and 1.0 too).
		pool := []any{"a", "b", json.Number("1"), json.Number("1.0"), true, nil, map[string]any{}}
		if kw == kwStringSet && r.IntN(2) == 0 {
			pool = pool[:2]
		}
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = pool[r.IntN(len(pool))]
		}
		return a
	case kwNumber, kwPositive, kwNonNegInteger:
		return json.Number(numbers[r.IntN(len(numbers))])
	}
	return randomJSON(r)
}

var numbers = []string{"0", "1", "-1", "-0", "1.0", "0.5", "1e2", "-2.5", "1e400", "1e-400", "12345678901234567890", "0.0"}

func randomJSON(r *rand.Rand) any {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return json.Number(numbers[r.IntN(len(numbers))])
	case 4:
		return []string{"a", "", "string", "https://json-schema.org/draft/2020-12/schema", "^("}[r.IntN(5)]
	case 5:
		return []any{"a", json.Number("1")}[:r.IntN(3)]
	case 6:
		return []any{"a", "a"}
	}
	return map[string]any{"type": "string"}
}

// TestMetaValidRandom: the implication on 20,000 random schemas built from
// every keyword, with values of their kind and not.
func TestMetaValidRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 3))
	vouched := 0
	for i := range 20000 {
		s := randomSchema(r, 3)
		if m, ok := s.(map[string]any); ok && r.IntN(2) == 0 {
			m["$schema"] = []string{"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-04/schema#"}[r.IntN(3)]
		}
		doc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if checkMetaValid(t, "random "+strconv.Itoa(i), doc) {
			vouched++
		}
	}
	t.Logf("metaValid vouched for %d of 20000", vouched)
	if vouched < 2000 {
		t.Errorf("metaValid vouched for %d random schemas of 20000: the generator tests too little", vouched)
	}
}

// FuzzMetaValid: the implication on any JSON document.
func FuzzMetaValid(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","enum":[1,"1"]}`, `{"minLength":0,"multipleOf":1e-9}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc)); err != nil {
			return
		}
		checkMetaValid(t, "fuzz", doc)
	})
}
