package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
)

// A profile narrows the global policy: the "review" view sees only the
// fixture server's echo, and calling any other tool is refused before it
// reaches the server, naming the rule that decided.
func ExampleHost_Profile() {
	fixture, err := testutil.BuildGoBinary("./testdata/mcpfixture")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := config.Parse([]byte(`
[servers.fx]
command = "`+fixture+`"

[policy]
deny = ["fx__crash"]

[profiles.review]
allow = ["fx__echo"]
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	h, err := host.New(ctx, cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	review, err := h.Profile("review")
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, _ := review.Tools(ctx)
	for _, t := range tools {
		fmt.Println("tool:", t.Name)
	}
	res, _ := review.CallTool(ctx, "fx__echo", map[string]any{"text": "hello"})
	fmt.Println("echo:", res.Content[0].(*mcp.TextContent).Text)

	_, err = review.CallTool(ctx, "fx__add", map[string]any{"a": 1, "b": 2})
	var denied *host.ToolNotAllowedError
	if errors.As(err, &denied) {
		fmt.Println("denied by", denied.Rule)
	}
	_, err = h.CallTool(ctx, "fx__crash", nil)
	fmt.Println(strings.TrimPrefix(err.Error(), "fx__crash: "))
	// Output:
	// tool: fx__echo
	// echo: hello
	// denied by profiles.review.allow (no glob matches)
	// tool "fx__crash" is not allowed in the policy (rule policy.deny[0] "fx__crash"); calling it again will fail the same way: use one of the tools in the list of available tools
}

// An embedder plugs in a backend of its own: any transport.Transport (here
// goTools, whose tools are Go functions, in gotools_test.go), made afresh by
// the function given for each start. It is supervised, listed, policed and
// audited like a configured backend; Disable, Enable and Remove work on it,
// and Apply keeps it.
func ExampleHost_Add() {
	cfg, err := config.Parse([]byte(`
[policy]
deny = ["go__wait"]
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	h, err := host.New(ctx, cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	newTransport := func() transport.Transport { return newGoTools(demoTools()) }
	if err := h.Add(ctx, "go", newTransport, nil); err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range h.Status() {
		fmt.Println("backend:", st.Name, st.Kind, st.State, st.Server)
	}
	tools, _ := h.Tools(ctx)
	for _, t := range tools {
		fmt.Println("tool:", t.Name)
	}
	res, _ := h.CallTool(ctx, "go__echo", map[string]any{"text": "hello from Go"})
	fmt.Println("echo:", res.Content[0].(*mcp.TextContent).Text)
	_, err = h.CallTool(ctx, "go__wait", nil)
	fmt.Println("wait allowed:", !errors.Is(err, host.ErrToolNotAllowed))

	if err := h.Remove(ctx, "go"); err != nil {
		fmt.Println(err)
	}
	_, err = h.CallTool(ctx, "go__echo", nil)
	fmt.Println("after Remove:", errors.Is(err, host.ErrUnknownTool))
	// Output:
	// backend: go custom ready gotools 1.0.0
	// tool: go__echo
	// echo: hello from Go
	// wait allowed: false
	// after Remove: true
}

// Apply runs a new configuration without a new Host: here it adds a
// server, and a second Apply with the first configuration removes it
// again (its process is gone when Apply returns). Backends whose tables did
// not change keep running untouched.
func ExampleHost_Apply() {
	fixture, err := testutil.BuildGoBinary("./testdata/mcpfixture")
	if err != nil {
		fmt.Println(err)
		return
	}
	before := "[servers.a]\ncommand = \"" + fixture + "\"\n"
	after := before + "\n[servers.b]\ncommand = \"" + fixture + "\"\n\n[policy]\ndeny = [\"*__crash\"]\n"
	parse := func(toml string) *config.Config {
		cfg, err := config.Parse([]byte(toml), nil)
		if err != nil {
			panic(err)
		}
		return cfg
	}
	ctx := context.Background()
	h, err := host.New(ctx, parse(before), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	rep, err := h.Apply(ctx, parse(after))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("added %v, unchanged %v, policy changed %v\n", rep.Added, rep.Unchanged, rep.Policy)
	res, _ := h.CallTool(ctx, "b__echo", map[string]any{"text": "hello"})
	fmt.Println("b__echo:", res.Content[0].(*mcp.TextContent).Text)

	if err := h.Disable(ctx, "b"); err != nil {
		fmt.Println(err)
	}
	_, err = h.CallTool(ctx, "b__echo", map[string]any{"text": "hello"})
	fmt.Println("disabled:", errors.Is(err, host.ErrBackendDisabled))

	rep, _ = h.Apply(ctx, parse(before))
	fmt.Printf("removed %v, unchanged %v\n", rep.Removed, rep.Unchanged)
	// Output:
	// added [b], unchanged [a], policy changed true
	// b__echo: hello
	// disabled: true
	// removed [b], unchanged [a]
}
