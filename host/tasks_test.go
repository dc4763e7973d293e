package host_test

//lint:file-ignore SA1019 elicitation is deprecated as of protocol 2026-07-28 (SEP-2577) but server-everything's task tool uses it

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestEverythingTask: server-everything's simulate-research-query requires
// task augmentation (execution.taskSupport "required"); through the host,
// over stdio and Streamable HTTP, Host.CallTool returns its final report,
// and the elicitation the task makes while input_required reaches the
// host's handler tied to the call.
func TestEverythingTask(t *testing.T) {
	testutil.NeedNpx(t)
	t.Run("stdio", func(t *testing.T) {
		everythingTask(t, `command = "npx"
args = [`+quoteArgs(append(append([]string{}, testutil.EverythingArgs...), "stdio"))+`]`)
	})
	t.Run("http", func(t *testing.T) {
		everythingTask(t, `url = "`+testutil.StartEverythingHTTP(t)+`"`)
	})
}

func everythingTask(t *testing.T, server string) {
	var mu sync.Mutex
	var asked []string
	h, _ := policyHost(t, `
[servers.everything]
`+server+`
timeout = "2m"
`, &host.Options{Elicit: func(ctx context.Context, req *host.ElicitationRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.Call != nil {
			asked = append(asked, req.Call.Tool)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"interpretation": "snake"}}, nil
	}})
	res, err := h.CallTool(context.Background(), "everything__simulate-research-query", map[string]any{"topic": "python", "ambiguous": true})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); res.IsError || !strings.Contains(got, "# Research Report") || !strings.Contains(got, "snake") {
		t.Fatalf("result (isError %v): %.400s", res.IsError, got)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, ",") != "everything__simulate-research-query" {
		t.Errorf("elicitation tied to calls %q", asked)
	}
}
