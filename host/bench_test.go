package host_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// BenchmarkCallTool compares a tool call through host.CallTool with the same
// call made directly with a go-sdk ClientSession on the same kind of server,
// for the Go fixture server and server-everything, both over stdio. The
// host's overhead is the ratio host/direct of each pair.
func BenchmarkCallTool(b *testing.B) {
	type target struct {
		name, tool string
		args       map[string]any
		cmd        func(b *testing.B) (string, []string)
	}
	targets := []target{
		{"fixture", "echo", map[string]any{"text": "hello"}, func(b *testing.B) (string, []string) {
			return testutil.Fixture(b), nil
		}},
		{"everything", "echo", map[string]any{"message": "hello"}, func(b *testing.B) (string, []string) {
			testutil.NeedNpx(b)
			return "npx", append(append([]string{}, testutil.EverythingArgs...), "stdio")
		}},
	}
	ctx := context.Background()
	for _, tg := range targets {
		b.Run(tg.name+"/direct", func(b *testing.B) {
			path, args := tg.cmd(b)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(path, args...)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: tg.tool, Arguments: tg.args}
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tg.name+"/host", func(b *testing.B) {
			path, args := tg.cmd(b)
			cfg := &config.Config{Servers: map[string]*config.Server{
				"t": {Name: "t", Command: path, Args: args, InheritEnv: config.DefaultInheritEnv},
			}}
			h, err := host.New(ctx, cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			name := "t__" + tg.tool
			b.ResetTimer()
			for b.Loop() {
				if _, err := h.CallTool(ctx, name, tg.args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
