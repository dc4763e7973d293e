package sandbox

import (
	"context"
	"testing"
)

func TestSmokeEcho(t *testing.T) {
	e := newTestEngine(t)
	p := connect(t, e, "echo", Manifest{Config: map[string]string{"echo_prefix": "> "}}, &PluginOptions{Logger: testLogger(t)})
	tools, err := p.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(len(tools), tools[0].Name)
	if got := callText(t, p, "echo", map[string]any{"text": "hi"}); got != "> hi" {
		t.Fatalf("got %q", got)
	}
	callText(t, p, "log", map[string]any{"text": "a log line"})
	callText(t, p, "print", map[string]any{"text": "printed line"})
}
