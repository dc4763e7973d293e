package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Tool declares one MCP tool (MCP spec 2025-06-18, "Tools" / Tool).
type Tool struct {
	// Name is the tool's name, 1–64 characters of [A-Za-z0-9_-], unique in
	// the plugin. The host prefixes it with the backend name
	// ("fetch" -> "fetch__fetch"), so keep it short.
	Name string
	// Title is an optional human-readable display name.
	Title string
	// Description tells the model what the tool does and when to use it.
	Description string
	// InputSchema is the JSON Schema of the arguments object, as JSON text.
	// It must be a JSON object whose "type" is "object". Empty means
	// {"type":"object"} (no arguments).
	InputSchema string
	// OutputSchema is the optional JSON Schema of the result's
	// structuredContent, as JSON text; when set, the tool should return
	// results built with Structured. The pdk does not validate results
	// against it.
	OutputSchema string
	// Annotations are optional behaviour hints for clients.
	Annotations *Annotations
	// Handler runs the tool. It must not be nil. See Handler.
	Handler Handler
}

// Handler runs one tool call.
//
// A returned error does not fail the call: it becomes a tool error result
// ({"isError": true} with the error's text), so the model can read it and
// correct itself, as the MCP spec asks for tool execution errors. Returning
// (nil, nil) means an empty successful result.
//
// A panic is not recovered: it is logged at error level (with its stack)
// through the host log and then aborts the Wasm call (the Go runtime exits
// the instance). The host reports the call as failed and replaces the
// instance, since its state can no longer be trusted.
type Handler func(c *Call) (*Result, error)

// Annotations are hints about a tool's behaviour (MCP ToolAnnotations). They
// are hints for clients, not guarantees the host enforces.
type Annotations struct {
	// Title is a human-readable title for the tool.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the tool does not modify its environment. Default false.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: the tool may perform destructive updates (only
	// meaningful when ReadOnlyHint is false). Nil means the MCP default, true.
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: repeating a call with the same arguments has no
	// additional effect. Default false.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool interacts with an open world of external
	// entities (e.g. the web). Nil means the MCP default, true.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for the *bool fields of Annotations.
func Bool(b bool) *bool { return &b }

// wireTool is a Tool as list_tools sends it.
type wireTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

var registry struct {
	sync.Mutex
	order []string
	tools map[string]registered
	errs  []error
}

type registered struct {
	wire    wireTool
	handler Handler
}

// Register declares tools. Call it from an init function of package main:
// a c-shared Wasm module runs package initialisers when it is instantiated
// but never runs main.
//
// Register does not panic. A tool with an invalid name, a duplicate name, a
// nil Handler or a schema that is not a JSON object is left out, and the
// problem is reported as the error of every list_tools and call_tool call, so
// the host refuses the plugin with a message that names the tool.
func Register(tools ...Tool) {
	registry.Lock()
	defer registry.Unlock()
	if registry.tools == nil {
		registry.tools = map[string]registered{}
	}
	for _, t := range tools {
		w, err := t.wire()
		if err == nil {
			if _, dup := registry.tools[t.Name]; dup {
				err = errors.New("registered twice")
			}
		}
		if err != nil {
			registry.errs = append(registry.errs, fmt.Errorf("pdk: tool %q: %w", t.Name, err))
			continue
		}
		registry.order = append(registry.order, t.Name)
		registry.tools[t.Name] = registered{wire: w, handler: t.Handler}
	}
}

func (t Tool) wire() (wireTool, error) {
	if !validName(t.Name) {
		return wireTool{}, errors.New("name must be 1-64 characters of [A-Za-z0-9_-]")
	}
	if t.Handler == nil {
		return wireTool{}, errors.New("Handler is nil")
	}
	in, err := schema(t.InputSchema, true)
	if err != nil {
		return wireTool{}, fmt.Errorf("InputSchema: %w", err)
	}
	w := wireTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: in, Annotations: t.Annotations}
	if t.OutputSchema != "" {
		if w.OutputSchema, err = schema(t.OutputSchema, false); err != nil {
			return wireTool{}, fmt.Errorf("OutputSchema: %w", err)
		}
	}
	return w, nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// schema checks that s is a JSON object with "type": "object" and returns it
// compacted. An empty s means {"type":"object"} when allowEmpty.
func schema(s string, allowEmpty bool) (json.RawMessage, error) {
	if s == "" && allowEmpty {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if string(m["type"]) != `"object"` {
		return nil, errors.New(`"type" must be "object" (MCP requires object schemas)`)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// registryErr returns the registration problems, or nil.
func registryErr() error {
	registry.Lock()
	defer registry.Unlock()
	return errors.Join(registry.errs...)
}
