package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/otelx/otlptest"
	"github.com/toolhost/toolhost/internal/testutil"
)

// traceEnv is the environment without any OTEL_ variable, plus set.
func traceEnv(set ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(s string) bool { return strings.HasPrefix(s, "OTEL_") })
	return append(env, set...)
}

// TestTraceCallBinary: `toolhost call` run as a child process with
// OTEL_EXPORTER_OTLP_ENDPOINT set exports its call's span by OTLP/HTTP
// to a real receiver on loopback before it exits, with the MCP and GenAI
// semantic-convention attributes; the audit record names the same trace.
// A tool error is the span's error.type. An unsupported protocol is a
// usage error naming the variable, before any backend starts.
func TestTraceCallBinary(t *testing.T) {
	bin := testutil.GoBinary(t, "./cmd/toolhost")
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "toolhost.toml")
	toml := "[host]\naudit_log = \"" + auditLog + "\"\n\n[servers.fx]\ncommand = \"" + testutil.Fixture(t) + "\"\n"
	if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := otlptest.New(t)

	call := exec.Command(bin, "--config", cfg, "call", "fx__echo", "--args", `{"text":"traced"}`)
	call.Env = traceEnv("OTEL_EXPORTER_OTLP_ENDPOINT=" + r.Endpoint)
	out, err := call.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "traced") {
		t.Fatalf("call: %v\n%s", err, out)
	}
	// Flushed at exit: no waiting here.
	spans := r.Named("tools/call fx__echo")
	if len(spans) != 1 {
		t.Fatalf("spans received: %v", r.Spans())
	}
	s := spans[0]
	for k, v := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fx__echo",
		"toolhost.backend": "fx", "toolhost.outcome": "ok",
	} {
		if s.Attrs[k] != v {
			t.Errorf("span %s = %q, want %q (all: %v)", k, s.Attrs[k], v, s.Attrs)
		}
	}
	if s.Resource["service.name"] != "toolhost" || len(s.ParentSpanId) != 0 || s.Kind.String() != "SPAN_KIND_CLIENT" {
		t.Errorf("resource %v, parent %q, kind %v", s.Resource, s.ParentID(), s.Kind)
	}
	raw, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		TraceID string `json:"trace_id"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(raw), "\n", 2)[0]), &rec); err != nil || rec.TraceID != s.TraceID() {
		t.Errorf("audit trace_id %q (%v), span's %q\n%s", rec.TraceID, err, s.TraceID(), raw)
	}

	fail := exec.Command(bin, "--config", cfg, "call", "fx__fail")
	fail.Env = traceEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + r.Endpoint + "/v1/traces")
	if out, err := fail.CombinedOutput(); exitCode(err) != exitToolError {
		t.Fatalf("fail: %v\n%s", err, out)
	}
	if spans := r.Named("tools/call fx__fail"); len(spans) != 1 || spans[0].Attrs["error.type"] != "tool_error" || spans[0].Status.GetCode().String() != "STATUS_CODE_ERROR" {
		t.Errorf("failed call's spans: %v", spans)
	}

	bad := exec.Command(bin, "--config", cfg, "call", "fx__echo", "--args", `{"text":"x"}`)
	bad.Env = traceEnv("OTEL_EXPORTER_OTLP_ENDPOINT="+r.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	out, err = bad.CombinedOutput()
	if exitCode(err) != exitUsage || !strings.Contains(string(out), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("grpc: %v\n%s", err, out)
	}

	off := exec.Command(bin, "--config", cfg, "call", "fx__echo", "--args", `{"text":"x"}`)
	off.Env = traceEnv("OTEL_SDK_DISABLED=true", "OTEL_EXPORTER_OTLP_ENDPOINT="+r.Endpoint)
	if out, err := off.CombinedOutput(); err != nil {
		t.Fatalf("disabled: %v\n%s", err, out)
	}
	if n := len(r.Spans()); n != 2 {
		t.Errorf("%d spans after a call with OTEL_SDK_DISABLED=true, want 2", n)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
