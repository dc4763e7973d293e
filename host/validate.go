package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	jsonschema "github.com/toolhost/toolhost/internal/jsonschemav6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer is built at its first use (language tables: not at init).
var printer = sync.OnceValue(func() *message.Printer { return message.NewPrinter(language.English) })

// noLoader refuses every $ref outside the schema itself: a tool's schema
// comes from its backend and must not make the host read files or the
// network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: only references inside the schema are resolved", url)
}

// compiledTool is a tool's input and output schemas compiled, or why they
// do not compile; or, with lazy set (Options.CompileOnDemand), a function
// that compiles them at its first call and returns that compiledTool
// (without lazy) at every call.
type compiledTool struct {
	in, out *jsonschema.Schema
	err     error
	lazy    func() compiledTool
}

// compileTool compiles t's schemas; name is its catalogue name.
func compileTool(name string, t *mcp.Tool) compiledTool {
	in, err := compileSchema(name, "inputSchema", t.InputSchema)
	var out *jsonschema.Schema
	if err == nil {
		out, err = compileSchema(name, "outputSchema", t.OutputSchema)
	}
	return compiledTool{in: in, out: out, err: err}
}

// compileTools compiles the schemas of b's tools (compileTools), or with
// hooks.compileOnDemand makes each a lazy compiledTool whose first run
// compiles it and logs, once, why its schemas do not compile.
func (b *backend) compileTools(ctx context.Context, tools []*mcp.Tool) (map[string]compiledTool, error) {
	if !b.hooks.compileOnDemand {
		return compileTools(ctx, b.prefix, tools)
	}
	out := make(map[string]compiledTool, len(tools))
	for _, t := range tools {
		name := catalogueName(b.prefix, t.Name)
		out[t.Name] = compiledTool{lazy: sync.OnceValue(func() compiledTool {
			c := compileTool(name, t)
			if c.err != nil {
				b.logger.Error("tool dropped: its schema does not compile", "tool", t.Name, "error", c.err)
			}
			return c
		})}
	}
	return out, nil
}

// compileTools compiles the schemas of a backend's tools (its own names;
// prefix makes their catalogue names), stopping with ctx's error when it
// is done: a start compiles under its startup_timeout, so a backend with
// a huge catalogue cannot stall the host past it (a list is capped at
// transport.MaxTools tools).
func compileTools(ctx context.Context, prefix string, tools []*mcp.Tool) (map[string]compiledTool, error) {
	out := make(map[string]compiledTool, len(tools))
	for i, t := range tools {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("compiling the schemas of %d tools: %w", len(tools), err)
			}
		}
		out[t.Name] = compileTool(catalogueName(prefix, t.Name), t)
	}
	return out, nil
}

// compileSchema compiles a tool's inputSchema or outputSchema (JSON Schema
// draft 2020-12 unless its $schema names another draft, e.g. draft-07). A nil
// schema compiles to nil (nothing to check).
func compileSchema(tool, which string, schema any) (*jsonschema.Schema, error) {
	if schema == nil {
		return nil, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", which, err)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", which, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.SkipMetaValidation(metaValid) // metavalid.go
	url := "toolhost:///" + tool + "/" + which + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", which, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%s does not compile: %w", which, err)
	}
	return s, nil
}

// describeInvalid turns a validation error into "FIELD: WHY" lines, FIELD a
// dotted path into the value ("user.age", "items[2]"; "(arguments)" or
// "(structuredContent)" for the value itself).
func describeInvalid(root string, err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msgs = append(msgs, fieldPath(root, e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer()))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(msgs) > 5 {
		msgs = append(msgs[:5], fmt.Sprintf("(%d more)", len(msgs)-5))
	}
	return strings.Join(msgs, "; ")
}

func fieldPath(root string, loc []string) string {
	if len(loc) == 0 {
		return "(" + root + ")"
	}
	var b strings.Builder
	for i, p := range loc {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
