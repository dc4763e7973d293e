package host_test

//lint:file-ignore SA1019 elicitation is deprecated as of protocol 2026-07-28 (SEP-2577) but server-everything's task tool uses it

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/transport"
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

// TestTaskLostThroughHost: a task the server no longer knows fails
// Host.CallTool with transport.ErrTaskLost, and the call is not retried.
func TestTaskLostThroughHost(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	h, _ := policyHost(t, `
[servers.tasks]
command = "`+testutil.GoBinary(t, "./testdata/taskfixture")+`"
`, &host.Options{Audit: func(r host.AuditRecord) {
		mu.Lock()
		defer mu.Unlock()
		if r.Tool == "tasks__lost" {
			attempts++
		}
	}})
	_, err := h.CallTool(context.Background(), "tasks__lost", nil)
	if !errors.Is(err, transport.ErrTaskLost) {
		t.Fatalf("err = %v, want transport.ErrTaskLost", err)
	}
	mu.Lock()
	if attempts != 1 {
		t.Errorf("%d attempts audited, want 1 (a lost task is not retried)", attempts)
	}
	mu.Unlock()
	res, err := h.CallTool(context.Background(), "tasks__slow", map[string]any{"polls": 2})
	if err != nil || text(t, res) != "slow done after 2 polls" {
		t.Fatalf("slow: %v", err)
	}
}
