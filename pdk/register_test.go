package pdk

import (
	"strings"
	"testing"
)

func TestToolValidation(t *testing.T) {
	h := func(*Call) (*Result, error) { return nil, nil }
	for _, tt := range []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "", Handler: h}, "name must be"},
		{Tool{Name: "a.b", Handler: h}, "name must be"},
		{Tool{Name: strings.Repeat("a", 65), Handler: h}, "name must be"},
		{Tool{Name: "ok"}, "Handler is nil"},
		{Tool{Name: "ok", Handler: h, InputSchema: `{"type":"string"}`}, `"type" must be "object"`},
		{Tool{Name: "ok", Handler: h, InputSchema: `{`}, "not a JSON object"},
		{Tool{Name: "ok", Handler: h, OutputSchema: `[]`}, "OutputSchema"},
		{Tool{Name: "a-Z_9", Handler: h, InputSchema: ` { "type" : "object" } `}, ""},
	} {
		w, err := tt.tool.wire()
		if tt.want == "" {
			if err != nil || string(w.InputSchema) != `{"type":"object"}` {
				t.Errorf("%q: %v %s", tt.tool.Name, err, w.InputSchema)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.tool.Name, err, tt.want)
		}
	}
}

// TestRegisterErrorFailsExports checks that a bad registration is reported by
// every export instead of panicking in init. It restores the registry.
func TestRegisterErrorFailsExports(t *testing.T) {
	registry.Lock()
	saved := registry.errs
	registry.Unlock()
	defer func() { registry.Lock(); registry.errs = saved; registry.Unlock() }()

	Register(Tool{Name: "bad name"})
	for _, f := range []func([]byte) ([]byte, error){listTools, callTool} {
		_, err := f([]byte(`{"request":{"name":"x"}}`))
		if err == nil || !strings.Contains(err.Error(), `pdk: tool "bad name": name must be`) {
			t.Errorf("err = %v", err)
		}
	}
}

func TestDuplicate(t *testing.T) {
	registry.Lock()
	saved := registry.errs
	registry.Unlock()
	defer func() { registry.Lock(); registry.errs = saved; registry.Unlock() }()
	h := func(*Call) (*Result, error) { return nil, nil }
	Register(Tool{Name: "dup_test", Handler: h}, Tool{Name: "dup_test", Handler: h})
	if err := registryErr(); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Errorf("err = %v", err)
	}
	registry.Lock()
	delete(registry.tools, "dup_test")
	registry.order = registry.order[:len(registry.order)-1]
	registry.Unlock()
}

func FuzzCallToolInput(f *testing.F) {
	f.Add([]byte(`{"request":{"name":"x","arguments":{}}}`))
	f.Add([]byte(`{"request":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = callTool(in) // must not panic
	})
}
