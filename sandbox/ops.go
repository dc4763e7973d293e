package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/toolhost/toolhost/transport"
)

// callContext is the "context" member of a v2 input.
type callContext struct {
	// ID numbers the plugin's calls (1, 2, ...), for correlating logs.
	ID uint64 `json:"id"`
	// Meta is the request's _meta, when it has one.
	Meta mcp.Meta `json:"_meta,omitempty"`
}

type v2Input struct {
	Request any         `json:"request,omitempty"`
	Context callContext `json:"context"`
}

func (p *Plugin) v2(request any, meta mcp.Meta) []byte {
	b, err := json.Marshal(v2Input{Request: request, Context: callContext{ID: p.callID.Add(1), Meta: meta}})
	if err != nil {
		// Only an argument value that cannot be encoded gets here.
		return nil
	}
	return b
}

// callToolInput is p.v2(params, params.Meta) for call_tool, written
// without reflection in the common case (no _meta, inputResponses or
// requestState; a name of printable ASCII that needs no escape; arguments
// nil, a json.RawMessage or a map): the same JSON value, as the guest
// decodes it (TestCallToolInput).
func (p *Plugin) callToolInput(params *mcp.CallToolParams) []byte {
	if len(params.Meta) > 0 || len(params.InputResponses) > 0 || params.RequestState != "" || !plainName(params.Name) {
		return p.v2(params, params.Meta)
	}
	var args []byte
	switch a := params.Arguments.(type) {
	case nil:
	case json.RawMessage:
		var buf bytes.Buffer
		buf.Grow(len(a))
		if json.Compact(&buf, a) != nil {
			return p.v2(params, params.Meta) // json.Marshal reports it
		}
		args = buf.Bytes()
	case map[string]any:
		b, err := json.Marshal(a)
		if err != nil {
			return nil
		}
		args = b
	default:
		return p.v2(params, params.Meta)
	}
	b := make([]byte, 0, len(args)+len(params.Name)+64)
	b = append(b, `{"request":{"name":"`...)
	b = append(b, params.Name...)
	b = append(b, '"')
	if args != nil {
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
	}
	b = append(b, `},"context":{"id":`...)
	b = strconv.AppendUint(b, p.callID.Add(1), 10)
	return append(b, "}}"...)
}

// plainName reports whether s is printable ASCII that JSON encoding leaves
// as it is.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func (p *Plugin) listInput(cursor string) []byte {
	if p.abi == ABIv1 {
		return []byte("{}")
	}
	if cursor == "" {
		return p.v2(nil, nil)
	}
	return p.v2(map[string]string{"cursor": cursor}, nil)
}

// decodeOutput parses a guest result into T; anything that is not a JSON
// object of T's shape (per check) is a protocol error.
func decodeOutput[T any](p *Plugin, export string, out []byte, check func(*T) error) (*T, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 || out[0] != '{' {
		return nil, p.errorf("%s: output is not a JSON object (%q): %w", export, clip(out), transport.ErrProtocol)
	}
	v := new(T)
	if err := json.Unmarshal(out, v); err != nil {
		return nil, p.errorf("%s: output is not a valid result: %v (%q): %w", export, err, clip(out), transport.ErrProtocol)
	}
	if check != nil {
		if err := check(v); err != nil {
			return nil, p.errorf("%s: %v: %w", export, err, transport.ErrProtocol)
		}
	}
	return v, nil
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

func checkTools(r *mcp.ListToolsResult) error {
	if r.Tools == nil {
		return errors.New(`result has no "tools" array`)
	}
	seen := map[string]bool{}
	for i, t := range r.Tools {
		if t == nil || t.Name == "" {
			return fmt.Errorf("tool %d has no name", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if t.InputSchema == nil {
			t.InputSchema = map[string]any{"type": "object"}
		}
	}
	return nil
}

// listOnce calls the list export once on a given instance (Connect's
// warm-up and memory probe).
func (p *Plugin) listOnce(ctx, parent context.Context, in *instance, cursor string) (*mcp.ListToolsResult, error) {
	export := p.listExport()
	out, err := in.call(ctx, parent, export, p.listInput(cursor))
	if err != nil {
		return nil, err
	}
	return decodeOutput(p, export, out, checkTools)
}

// ListTools calls list_tools (v2) or describe (v1), following nextCursor
// (v2) for at most transport.MaxListPages (100) pages and
// transport.MaxTools (10000) tools in all (beyond: transport.ErrListLimit). A tool without inputSchema gets
// {"type":"object"}. Output that is not a tools list wraps
// transport.ErrProtocol; a guest-reported failure wraps ErrGuest.
//
// After a Connect that found the plugin's tools in the tool-list cache (see
// ToolCacheDir), ListTools returns them without running the guest; the
// first complete live listing of a Plugin otherwise writes that cache.
func (p *Plugin) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	if tools, ok, err := p.cachedToolList(); ok {
		return tools, err
	}
	export := p.listExport()
	tools, err := transport.ListPaged(ctx, "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		var res *mcp.ListToolsResult
		err := p.invoke(ctx, export, p.listInput(cursor), func(out []byte) (err error) {
			res, err = decodeOutput(p, export, out, checkTools)
			return err
		})
		if err != nil {
			return nil, "", err
		}
		if p.abi == ABIv1 {
			return res.Tools, "", nil
		}
		return res.Tools, res.NextCursor, nil
	})
	if err != nil {
		return nil, p.listErr(export, err)
	}
	p.storeToolList(tools)
	return tools, nil
}

// listErr names the export in an error of a list over its caps.
func (p *Plugin) listErr(export string, err error) error {
	if errors.Is(err, transport.ErrListLimit) {
		return p.errorf("%s: %w", export, err)
	}
	return err
}

// CallTool calls call_tool (v2, input {"request": params, "context": ...})
// or call (v1, input {"params": {"name", "arguments"}}). A failure the guest
// reports with error_set is returned as a result with IsError set and the
// message as text, not as an error. A result without content and without
// structuredContent, or output that is not JSON, wraps transport.ErrProtocol.
func (p *Plugin) CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	res, _, err := p.CallToolSized(ctx, params)
	return res, err
}

// CallToolSized is CallTool that also returns the size in bytes of the
// guest's output (at most max_output), or, for the result made from a
// failure the guest reported with error_set, of that result's JSON encoding;
// 0 with an error. It implements transport.SizedCaller.
func (p *Plugin) CallToolSized(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, int, error) {
	if params == nil || params.Name == "" {
		return nil, 0, p.errorf("call_tool: no tool name given")
	}
	var export string
	var input []byte
	if p.ABI() == ABIv1 {
		export = "call"
		b, err := json.Marshal(map[string]any{"params": map[string]any{"name": params.Name, "arguments": params.Arguments}})
		if err != nil {
			return nil, 0, p.errorf("call: encoding arguments: %v", err)
		}
		input = b
	} else {
		export = "call_tool"
		input = p.callToolInput(params)
		if input == nil {
			return nil, 0, p.errorf("call_tool: arguments cannot be encoded as JSON")
		}
	}
	var res *mcp.CallToolResult
	var size int
	err := p.invoke(ctx, export, input, func(out []byte) (err error) {
		res, err = decodeCallToolResult(p, export, out)
		size = len(out)
		return err
	})
	if err != nil {
		var ge *guestError
		if errors.As(err, &ge) {
			res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ge.msg}}}
			enc, merr := json.Marshal(res)
			if merr != nil {
				return nil, 0, p.errorf("%s: encoding the guest's error as a result: %v", export, merr)
			}
			return res, len(enc), nil
		}
		return nil, 0, err
	}
	return res, size, nil
}

// decodeCallToolResult decodes a call_tool/call output: text-only results
// without the go-sdk's decoder (fastCallToolResult), anything else with it.
func decodeCallToolResult(p *Plugin, export string, out []byte) (*mcp.CallToolResult, error) {
	if r, ok := fastCallToolResult(bytes.TrimSpace(out)); ok {
		return r, nil
	}
	return decodeOutput(p, export, out, func(r *mcp.CallToolResult) error {
		if r.Content == nil && r.StructuredContent == nil {
			return errors.New(`result has neither "content" nor "structuredContent"`)
		}
		if r.Content == nil {
			r.Content = []mcp.Content{}
		}
		return nil
	})
}

func (p *Plugin) has(export string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.module == nil || p.abi != ABIv2 {
		return false
	}
	_, ok := p.module.Exports[export]
	return ok
}

func (p *Plugin) unsupported(op, export string) error {
	if p.ABI() == "" {
		return p.errorf("%s: %w", op, transport.ErrNotConnected)
	}
	return p.errorf("%s: the module does not export %s: %w", op, export, transport.ErrUnsupported)
}

// ListResources calls list_resources (v2 only), following nextCursor. It
// returns transport.ErrUnsupported when the module does not export it.
func (p *Plugin) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	if !p.has("list_resources") {
		return nil, p.unsupported("list_resources", "list_resources")
	}
	resources, err := transport.ListPaged(ctx, "resources", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		var res *mcp.ListResourcesResult
		err := p.invoke(ctx, "list_resources", p.listInput(cursor), func(out []byte) (err error) {
			res, err = decodeOutput(p, "list_resources", out, func(r *mcp.ListResourcesResult) error {
				if r.Resources == nil {
					return errors.New(`result has no "resources" array`)
				}
				return nil
			})
			return err
		})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
	return resources, p.listErr("list_resources", err)
}

// ReadResource calls read_resource (v2 only) with {"request": params, ...}.
// It returns transport.ErrUnsupported when the module does not export it.
func (p *Plugin) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if !p.has("read_resource") {
		return nil, p.unsupported("read_resource", "read_resource")
	}
	var res *mcp.ReadResourceResult
	err := p.invoke(ctx, "read_resource", p.v2(params, params.Meta), func(out []byte) (err error) {
		res, err = decodeOutput(p, "read_resource", out, func(r *mcp.ReadResourceResult) error {
			if r.Contents == nil {
				return errors.New(`result has no "contents" array`)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ListPrompts calls list_prompts (v2 only), following nextCursor. It
// returns transport.ErrUnsupported when the module does not export it.
func (p *Plugin) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	if !p.has("list_prompts") {
		return nil, p.unsupported("list_prompts", "list_prompts")
	}
	prompts, err := transport.ListPaged(ctx, "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		var res *mcp.ListPromptsResult
		err := p.invoke(ctx, "list_prompts", p.listInput(cursor), func(out []byte) (err error) {
			res, err = decodeOutput(p, "list_prompts", out, func(r *mcp.ListPromptsResult) error {
				if r.Prompts == nil {
					return errors.New(`result has no "prompts" array`)
				}
				return nil
			})
			return err
		})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
	return prompts, p.listErr("list_prompts", err)
}

// GetPrompt calls get_prompt (v2 only) with {"request": params, ...}. It
// returns transport.ErrUnsupported when the module does not export it.
func (p *Plugin) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if !p.has("get_prompt") {
		return nil, p.unsupported("get_prompt", "get_prompt")
	}
	var res *mcp.GetPromptResult
	err := p.invoke(ctx, "get_prompt", p.v2(params, params.Meta), func(out []byte) (err error) {
		res, err = decodeOutput(p, "get_prompt", out, func(r *mcp.GetPromptResult) error {
			if r.Messages == nil {
				return errors.New(`result has no "messages" array`)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// peakMemory is a wazero linear memory that records its largest size.
type peakMemory struct {
	buf  []byte
	peak *atomic.Uint64
}

func (m *peakMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		nb := make([]byte, size, size+size/4)
		copy(nb, m.buf)
		m.buf = nb
	} else {
		m.buf = m.buf[:size]
	}
	for {
		old := m.peak.Load()
		if size <= old || m.peak.CompareAndSwap(old, size) {
			break
		}
	}
	return m.buf
}

func (m *peakMemory) Free() { m.buf = nil }

// withPeakAllocator makes modules instantiated with ctx record their
// largest linear memory size in peak.
func withPeakAllocator(ctx context.Context, peak *atomic.Uint64) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(c, max uint64) experimental.LinearMemory {
		return &peakMemory{buf: make([]byte, 0, c), peak: peak}
	}))
}
