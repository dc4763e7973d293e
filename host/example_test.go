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
