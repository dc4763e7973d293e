// Package transporttest is the conformance suite every transport.Transport
// implementation must pass, in the spirit of testing/slogtest: an
// implementation's tests call Run with a factory and a description of a tool
// the backend offers.
package transporttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhost/toolhost/transport"
)

// Backend describes the backend under test.
type Backend struct {
	// New returns a new, unconnected Transport to a fresh backend. Run calls
	// it once per subtest and closes what it returns.
	New func(t *testing.T) transport.Transport

	// Echo is a tool that returns its Arg argument's string value as its
	// first text content. EchoArg names the argument ("text" by default).
	Echo    string
	EchoArg string

	// Slow is a tool that takes SlowArgs and runs for at least a second,
	// used to check cancellation. Empty skips that check.
	Slow     string
	SlowArgs map[string]any
}

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, b Backend) {
	if b.EchoArg == "" {
		b.EchoArg = "text"
	}
	connect := func(t *testing.T) transport.Transport {
		t.Helper()
		tr := b.New(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		init, err := tr.Connect(ctx)
		if err != nil {
			tr.Close()
			t.Fatalf("Connect: %v", err)
		}
		if init == nil || init.ServerInfo == nil || init.Capabilities == nil {
			tr.Close()
			t.Fatalf("Connect returned %+v; want serverInfo and capabilities", init)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	echo := func(ctx context.Context, tr transport.Transport, text string) (string, error) {
		res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: b.Echo, Arguments: map[string]any{b.EchoArg: text}})
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("echo returned a tool error: %v", res.Content)
		}
		if len(res.Content) == 0 {
			return "", errors.New("echo returned no content")
		}
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok {
			return "", fmt.Errorf("echo content is %T, want text", res.Content[0])
		}
		return tc.Text, nil
	}
	ctx := context.Background()

	t.Run("ListTools", func(t *testing.T) {
		tr := connect(t)
		tools, err := tr.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, tool := range tools {
			if tool.Name == "" || tool.InputSchema == nil {
				t.Errorf("tool %+v lacks a name or an input schema", tool)
			}
			found = found || tool.Name == b.Echo
		}
		if !found {
			t.Fatalf("tool %q not listed among %d tools", b.Echo, len(tools))
		}
	})

	t.Run("CallTool", func(t *testing.T) {
		tr := connect(t)
		got, err := echo(ctx, tr, "héllo, wörld")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, "héllo, wörld") {
			t.Fatalf("echo = %q", got)
		}
	})

	t.Run("UnknownTool", func(t *testing.T) {
		tr := connect(t)
		res, err := tr.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool_xyz", Arguments: map[string]any{}})
		if err == nil && (res == nil || !res.IsError) {
			t.Fatalf("calling an unknown tool: got %+v, want an error or an isError result", res)
		}
		// The connection stays usable.
		if _, err := echo(ctx, tr, "still here"); err != nil {
			t.Fatalf("after unknown tool: %v", err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		tr := connect(t)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := fmt.Sprintf("call-%d", i)
				got, err := echo(ctx, tr, want)
				if err == nil && !strings.Contains(got, want) {
					err = fmt.Errorf("call %d got %q", i, got)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("ResourcesAndPrompts", func(t *testing.T) {
		tr := connect(t)
		if _, err := tr.ListResources(ctx); err != nil && !errors.Is(err, transport.ErrUnsupported) {
			t.Errorf("ListResources: %v (want success or ErrUnsupported)", err)
		}
		if _, err := tr.ListPrompts(ctx); err != nil && !errors.Is(err, transport.ErrUnsupported) {
			t.Errorf("ListPrompts: %v (want success or ErrUnsupported)", err)
		}
	})

	t.Run("Ping", func(t *testing.T) {
		tr := connect(t)
		if err := tr.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		tr.Close()
		if err := tr.Ping(ctx); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Ping after Close: %v, want ErrClosed", err)
		}
	})

	t.Run("BeforeConnect", func(t *testing.T) {
		tr := b.New(t)
		defer tr.Close()
		if _, err := tr.ListTools(ctx); !errors.Is(err, transport.ErrNotConnected) {
			t.Errorf("ListTools before Connect: %v, want ErrNotConnected", err)
		}
		if err := tr.Ping(ctx); !errors.Is(err, transport.ErrNotConnected) {
			t.Errorf("Ping before Connect: %v, want ErrNotConnected", err)
		}
	})

	t.Run("Close", func(t *testing.T) {
		tr := connect(t)
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); tr.Close() }()
		}
		wg.Wait()
		if err := tr.Close(); err != nil {
			t.Errorf("second Close: %v, want nil", err)
		}
		if _, err := tr.ListTools(ctx); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("ListTools after Close: %v, want ErrClosed", err)
		}
		if _, err := tr.Connect(ctx); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Connect after Close: %v, want ErrClosed", err)
		}
	})

	t.Run("Deadline", func(t *testing.T) {
		if b.Slow == "" {
			t.Skip("backend has no slow tool")
		}
		tr := connect(t)
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := tr.CallTool(cctx, &mcp.CallToolParams{Name: b.Slow, Arguments: b.SlowArgs})
		if !errors.Is(err, transport.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow call with a 200ms deadline: %v, want ErrTimeout and DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("slow call returned after %v, want promptly after its deadline", d)
		}
		if _, err := echo(ctx, tr, "after timeout"); err != nil {
			t.Fatalf("after a timed-out call: %v", err)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		if b.Slow == "" {
			t.Skip("backend has no slow tool")
		}
		tr := connect(t)
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := tr.CallTool(cctx, &mcp.CallToolParams{Name: b.Slow, Arguments: b.SlowArgs})
		if !errors.Is(err, context.Canceled) || errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("cancelled call: %v, want context.Canceled (and not ErrTimeout)", err)
		}
		if _, err := echo(ctx, tr, "after cancel"); err != nil {
			t.Fatalf("after a cancelled call: %v", err)
		}
	})
}
