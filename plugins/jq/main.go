// Command jq is a toolhost plugin that runs jq filters over JSON with gojq.
//
// Build: cd plugins && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o jq.wasm ./jq
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/toolhost/toolhost/pdk"
)

const (
	defaultMaxResults = 1000
	maxTextBytes      = 1 << 20
)

func init() {
	pdk.Register(pdk.Tool{
		Name:  "jq",
		Title: "jq",
		Description: "Run a jq filter (gojq dialect) over JSON and return the results. " +
			"input is a JSON value, or a string holding JSON text (several whitespace-separated values, e.g. JSON Lines, are run one by one). " +
			"Set raw_input to treat a string input as plain text. vars binds $name variables. " +
			"Results come back as structuredContent {\"results\": [...]} and as text, one JSON value per line.",
		InputSchema: `{
			"type": "object",
			"properties": {
				"filter": {"type": "string", "description": "The jq program, e.g. \".items[] | select(.price > 10) | .name\"."},
				"input": {"description": "The input: any JSON value, or a string of JSON text. Omit for null input (like jq -n)."},
				"raw_input": {"type": "boolean", "description": "Use a string input as one plain string value instead of parsing it as JSON (like jq -R with the whole text). Default false."},
				"vars": {"type": "object", "description": "Variables for the filter: {\"x\": 1} makes $x available.", "additionalProperties": true},
				"max_results": {"type": "integer", "minimum": 1, "description": "Stop after this many results. Default 1000."}
			},
			"required": ["filter"],
			"additionalProperties": false
		}`,
		OutputSchema: `{
			"type": "object",
			"properties": {
				"results": {"type": "array"},
				"truncated": {"type": "boolean"}
			},
			"required": ["results", "truncated"]
		}`,
		Annotations: &pdk.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: pdk.Bool(false)},
		Handler:     run,
	})
}

type args struct {
	Filter     string          `json:"filter"`
	Input      json.RawMessage `json:"input"`
	RawInput   bool            `json:"raw_input"`
	Vars       map[string]any  `json:"vars"`
	MaxResults int             `json:"max_results"`
}

func run(c *pdk.Call) (*pdk.Result, error) {
	var a args
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Filter) == "" {
		return pdk.Errorf("filter is empty; use \".\" for the identity filter"), nil
	}
	if a.MaxResults <= 0 {
		a.MaxResults = defaultMaxResults
	}
	inputs, err := parseInputs(a.Input, a.RawInput)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}

	names := make([]string, 0, len(a.Vars))
	for k := range a.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	values := make([]any, len(names))
	for i, k := range names {
		values[i] = normalize(a.Vars[k])
		names[i] = "$" + strings.TrimPrefix(k, "$")
	}
	code, err := compile(a.Filter, names)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	in := &sliceIter{values: inputs}
	feed.cur = in
	defer func() { feed.cur = nil }()

	results := []json.RawMessage{}
	truncated := false
	textLen := 0
run:
	for {
		v, ok := in.Next()
		if !ok {
			break
		}
		iter := code.Run(v, values...)
		for {
			r, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := r.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					break run
				}
				return pdk.Errorf("jq: %v", err), nil
			}
			if len(results) == a.MaxResults {
				truncated = true
				break run
			}
			b, err := gojq.Marshal(r)
			if err != nil {
				return pdk.Errorf("jq: encoding result %d: %v", len(results)+1, err), nil
			}
			textLen += len(b) + 1
			if textLen > maxTextBytes {
				truncated = true
				break run
			}
			results = append(results, b)
		}
	}

	var text bytes.Buffer
	switch len(results) {
	case 0:
		text.WriteString("(no results)")
	case 1:
		if err := json.Indent(&text, results[0], "", "  "); err != nil {
			text.Write(results[0])
		}
	default:
		for i, r := range results {
			if i > 0 {
				text.WriteByte('\n')
			}
			text.Write(r)
		}
	}
	if truncated {
		fmt.Fprintf(&text, "\n[Stopped after %d results; raise max_results or narrow the filter.]", len(results))
	}
	return &pdk.Result{
		Content:           []pdk.Content{pdk.TextContent(text.String())},
		StructuredContent: map[string]any{"results": results, "truncated": truncated},
	}, nil
}

// feed is the input iterator compiled into every program; each call points it
// at its own inputs. An instance serves one call at a time.
var feed = &inputFeed{}

type inputFeed struct{ cur *sliceIter }

func (f *inputFeed) Next() (any, bool) {
	if f.cur == nil {
		return nil, false
	}
	return f.cur.Next()
}

// programs caches compiled programs by filter and variable names: parsing and
// compiling cost more than running a typical filter.
var programs = map[string]*gojq.Code{}

func compile(filter string, vars []string) (*gojq.Code, error) {
	key := strings.Join(vars, ",") + "\x00" + filter
	if c, ok := programs[key]; ok {
		return c, nil
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		return nil, fmt.Errorf("jq: syntax error in filter: %v", err)
	}
	c, err := gojq.Compile(q,
		gojq.WithVariables(vars),
		gojq.WithEnvironLoader(func() []string { return nil }), // $ENV is empty: no host environment leaks in
		gojq.WithInputIter(feed),
	)
	if err != nil {
		return nil, fmt.Errorf("jq: compile error: %v", err)
	}
	if len(programs) >= 32 {
		clear(programs)
	}
	programs[key] = c
	return c, nil
}

// parseInputs turns the input argument into the jq input values.
func parseInputs(raw json.RawMessage, rawInput bool) ([]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return []any{nil}, nil
	}
	v, err := decodeAll(raw)
	if err != nil || len(v) != 1 {
		return nil, fmt.Errorf("input is not valid JSON: %v", err)
	}
	s, isString := v[0].(string)
	if !isString {
		return v, nil
	}
	if rawInput {
		return []any{s}, nil
	}
	vals, err := decodeAll([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("input is a string but not JSON text (%v); pass the JSON value itself, or set raw_input to use the string as is", err)
	}
	if len(vals) == 0 {
		return nil, errors.New("input is an empty string; pass JSON, or omit input for null input")
	}
	return vals, nil
}

// decodeAll decodes a stream of JSON values, keeping numbers exact.
func decodeAll(b []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, normalize(v))
	}
}

// normalize converts json.Number to the int or float64 gojq computes with
// (big integers keep their exact value as json.Number).
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil && int64(int(i)) == i {
			return int(i)
		}
		if strings.ContainsAny(string(v), ".eE") {
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
		return v // a big integer: gojq parses json.Number into *big.Int
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
		return v
	case map[string]any:
		for k := range v {
			v[k] = normalize(v[k])
		}
		return v
	}
	return v
}

// sliceIter feeds the inputs to the main loop and to jq's input/inputs.
type sliceIter struct {
	values []any
	next   int
}

func (s *sliceIter) Next() (any, bool) {
	if s.next >= len(s.values) {
		return nil, false
	}
	v := s.values[s.next]
	s.next++
	return v, true
}

func main() {}
