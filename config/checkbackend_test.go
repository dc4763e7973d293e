package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestCheckBackend: a backend without a table gets a table's checks,
// defaults and rule keys.
func TestCheckBackend(t *testing.T) {
	var sv config.Supervision
	allow, deny, err := config.CheckBackend("go", &sv, nil, []string{"read_*"}, []string{"read_secret"})
	if err != nil {
		t.Fatal(err)
	}
	if sv.Start != "eager" || sv.StartupTimeout == 0 {
		t.Errorf("supervision defaults not filled in: %+v", sv)
	}
	if len(allow) != 1 || !strings.Contains(allow[0].String(), "servers.go.tools") {
		t.Errorf("allow rules: %v", allow)
	}
	if len(deny) != 1 || !strings.Contains(deny[0].String(), "servers.go.deny_tools") {
		t.Errorf("deny rules: %v", deny)
	}
	bad := "bad prefix!"
	for name, c := range map[string]struct {
		sv     config.Supervision
		prefix *string
		tools  []string
		want   string
	}{
		"prefix":      {prefix: &bad, want: `servers.go.prefix: invalid prefix "bad prefix!"`},
		"empty tools": {tools: []string{}, want: "servers.go.tools: an empty list allows no tool"},
		"start":       {sv: config.Supervision{Start: "sometimes"}, want: "servers.go.start"},
	} {
		_, _, err := config.CheckBackend("go", &c.sv, c.prefix, c.tools, nil)
		var el config.ErrorList
		if !errors.As(err, &el) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a config.ErrorList with %q", name, err, c.want)
		}
	}
}
