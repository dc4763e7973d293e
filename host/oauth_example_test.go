package host_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/oauthtest"
	"github.com/toolhost/toolhost/transport"
)

// An HTTP server that wants OAuth: without Options.Authorize it needs a
// login (toolhost login NAME); with it, the host completes the
// authorization-code grant itself (here a headless client that fetches
// the authorization URL of a loopback authorization server).
func Example_oAuth() {
	as := oauthtest.New(nil, nil) // a loopback authorization server and MCP server
	defer as.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
[servers.remote]
url = %q
[servers.remote.oauth]
scopes = ["read"]
`, as.MCPURL)), nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	store := &transport.MemoryTokenStore{} // default: token files under the user config dir

	h, err := host.New(ctx, cfg, &host.Options{TokenStore: store})
	if err != nil {
		panic(err)
	}
	fmt.Println("without Authorize:", h.Status()[0].State)
	h.Close()

	h, err = host.New(ctx, cfg, &host.Options{
		TokenStore: store,
		Authorize: func(ctx context.Context, server string, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return oauthtest.Fetch(ctx, a) // a GUI would open a.URL and wait for the redirect
		},
	})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	res, err := h.CallTool(ctx, "remote__echo", map[string]any{"text": "authorized"})
	if err != nil {
		panic(err)
	}
	fmt.Println("with Authorize:", h.Status()[0].State, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// without Authorize: needs_login
	// with Authorize: ready authorized
}
