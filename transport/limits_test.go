package transport_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

// TestServerTextIsBounded: a hostile server's error texts (a tools/list or
// tools/call JSON-RPC error of megabytes) and its serverInfo and
// instructions reach the host cut to transport.MaxErrorText /
// transport.MaxInfoText.
func TestServerTextIsBounded(t *testing.T) {
	s := fixtureStdio(t, "-hostile", "list-error,call-error,big-info", "-hostile-size", "2097152")
	defer s.Close()
	ctx := context.Background()
	init, err := s.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(init.ServerInfo.Name) + len(init.ServerInfo.Version) + len(init.ServerInfo.Title); n > 3*(transport.MaxInfoText+32) {
		t.Errorf("serverInfo reached the host with %d bytes", n)
	}
	if n := len(init.Instructions); n > transport.MaxErrorText+32 {
		t.Errorf("instructions reached the host with %d bytes", n)
	}
	_, err = s.ListTools(ctx)
	if err == nil {
		t.Fatal("ListTools succeeded")
	}
	if n := len(err.Error()); n > transport.MaxErrorText+256 {
		t.Errorf("tools/list error of %d bytes, want at most about %d", n, transport.MaxErrorText)
	}
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "rpcerror", Arguments: map[string]any{}})
	if err == nil {
		t.Fatal("CallTool rpcerror succeeded")
	}
	if n := len(err.Error()); n > transport.MaxErrorText+256 {
		t.Errorf("tools/call error of %d bytes, want at most about %d", n, transport.MaxErrorText)
	}
	t.Logf("cut error: %.200s…", err)
	// The session still works.
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || errors.Is(err, transport.ErrProtocol) {
		t.Fatalf("echo after the floods: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "still here" {
		t.Fatalf("echo: %+v", res.Content)
	}
}

// TestServerCatalogueIsBounded: a server whose nextCursor never ends, or
// whose pages hold more tools than MaxTools in all, fails tools/list with
// ErrListLimit naming the cap.
func TestServerCatalogueIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"endless-cursor", []string{"-hostile", "endless-cursor"}, "pages"},
		{"big-pages", []string{"-hostile", "big-pages", "-hostile-tools", "3000", "-hostile-pages", "5"}, "tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixtureStdio(t, tc.args...)
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := s.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			tools, err := s.ListTools(ctx)
			if !errors.Is(err, transport.ErrListLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ListTools: %d tools, %v; want ErrListLimit naming the %s cap", len(tools), err, tc.want)
			}
			t.Log(err)
			if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
				t.Fatalf("echo after the flood: %v", err)
			}
		})
	}
}
