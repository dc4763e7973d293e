package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrInvalidArguments is wrapped by the error Bind returns when the arguments
// do not decode into the target.
var ErrInvalidArguments = errors.New("invalid arguments")

// Call is one tool invocation.
type Call struct {
	// Name is the tool's name as registered (without the host's prefix).
	Name string
	// Arguments is the raw JSON arguments object; {} when the caller sent none.
	Arguments json.RawMessage
	// Meta is the request's "_meta" object, or nil.
	Meta json.RawMessage
	// Context is the ABI's per-call "context" object as the host sent it
	// (hyper-mcp v2: {"id", "_meta"}), or nil.
	Context json.RawMessage
}

// Bind decodes the arguments into v (a pointer) as encoding/json does
// (json.Unmarshal; a flat object into a struct of strings, booleans and
// numbers takes a faster path with the same result, see bind.go): unknown
// fields are ignored, missing ones keep their zero value. The error wraps
// ErrInvalidArguments; returned from a Handler it becomes a tool error result
// such as "invalid arguments: json: cannot unmarshal string into Go struct
// field .limit of type int", which a model can act on.
func (c *Call) Bind(v any) error {
	args := c.Arguments
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if bindFast(args, v) {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return nil
}
