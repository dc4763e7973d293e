package transport

//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 (SEP-2577) but clients and servers still use them

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"
)

// The go-sdk v1.8 client refuses an elicitation/create whose requested
// schema it judges outside MCP's restricted subset (MCP 2025-11-25
// client/elicitation, "Requested Schema"); its check is stricter than the
// specification: a titled multi-select whose items say "type": "string"
// next to "anyOf" (as the go-sdk's own conformance server sends) is
// refused, so the request never reached toolhost's handler. checkedElicit
// is a receiving middleware that lets the go-sdk check the request first
// and, when it refuses the schema before the handler ran, checks it again
// by the specification's rule (a flat object: no property with properties
// of its own) and, if that passes, calls the handler itself and checks an
// accepted answer against the schema (JSON Schema 2020-12), as the go-sdk
// would have.

type elicitRanKey struct{}

// checkedElicit returns the middleware for handler (the wrapped
// ClientOptions.Elicit; nil: none).
func checkedElicit(handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "elicitation/create" || handler == nil {
				return next(ctx, method, req)
			}
			ran := new(bool)
			res, err := next(context.WithValue(ctx, elicitRanKey{}, ran), method, req)
			var werr *jsonrpc.Error
			if err == nil || *ran || !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				return res, err
			}
			er, ok := req.(*mcp.ElicitRequest)
			if !ok || er.Params == nil || (er.Params.Mode != "" && er.Params.Mode != "form") {
				return res, err
			}
			schema, cerr := elicitSchema(er.Params.RequestedSchema)
			if cerr != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: cerr.Error()}
			}
			out, herr := handler(ctx, er)
			if herr != nil || out == nil || out.Action != "accept" || out.Content == nil || schema == nil {
				return out, herr
			}
			if verr := validateContent(schema, out.Content); verr != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation result content does not match requested schema: " + verr.Error()}
			}
			return out, nil
		}
	}
}

// relayRoots is a receiving middleware that answers roots/list with f
// (ClientOptions.ListRoots) when it has an answer, in the call's context.
func relayRoots(f func(context.Context) ([]*mcp.Root, bool, error), calls *callSet) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			cctx, done := calls.inCall(ctx)
			roots, ok, err := f(cctx)
			done()
			if err != nil {
				return nil, err
			}
			if !ok {
				return next(ctx, method, req)
			}
			if roots == nil {
				roots = []*mcp.Root{}
			}
			return &mcp.ListRootsResult{Roots: roots}, nil
		}
	}
}

// markElicitRan notes, for checkedElicit, that the handler was reached.
func markElicitRan(ctx context.Context) {
	if ran, ok := ctx.Value(elicitRanKey{}).(*bool); ok {
		*ran = true
	}
}

// elicitSchema checks a requested schema by MCP 2025-11-25
// client/elicitation (an object of primitive properties, which may be
// enums or arrays of enums, never objects of their own) and compiles it;
// nil for none.
func elicitSchema(schema any) (*jsonschema.Schema, error) {
	if schema == nil {
		return nil, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var top struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("elicit schema: %w", err)
	}
	if top.Type != "" && top.Type != "object" {
		return nil, fmt.Errorf("elicit schema must be of type 'object', got %q", top.Type)
	}
	for name, p := range top.Properties {
		var prop struct {
			Type       any            `json:"type"`
			Properties map[string]any `json:"properties"`
			Items      *struct {
				Type       any            `json:"type"`
				Properties map[string]any `json:"properties"`
			} `json:"items"`
		}
		if err := json.Unmarshal(p, &prop); err != nil {
			return nil, fmt.Errorf("elicit schema property %q: %w", name, err)
		}
		if len(prop.Properties) > 0 || prop.Type == "object" || (prop.Items != nil && (len(prop.Items.Properties) > 0 || prop.Items.Type == "object")) {
			return nil, fmt.Errorf("elicit schema property %q is an object; only primitive properties are allowed", name)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	const url = "toolhost:///elicitation.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("elicit schema does not compile: %w", err)
	}
	return s, nil
}

func validateContent(s *jsonschema.Schema, content map[string]any) error {
	raw, err := json.Marshal(content)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// refuseLoader loads nothing: a server's schema may not make toolhost read
// files or fetch URLs.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("elicit schema: $ref to %s is not followed", url)
}
