package config_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/config"
)

// TestToolPrefix pins the default prefix (NAME__), an explicit one, and
// prefix "" (none).
func TestToolPrefix(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		backend string
		prefix  *string
		want    string
	}{
		{"git", nil, "git__"},
		{"git", s("g_"), "g_"},
		{"git", s(""), ""},
		{"my.server", nil, "my.server__"}, // as written; ToolName sanitizes
	} {
		if got := config.ToolPrefix(tc.backend, tc.prefix); got != tc.want {
			t.Errorf("ToolPrefix(%q, %v) = %q; want %q", tc.backend, tc.prefix, got, tc.want)
		}
	}
}

// TestToolName pins the catalogue name of a backend tool: prefix + name,
// characters outside [A-Za-z0-9_-] as "_", over 64 bytes shortened to 55 +
// "_" + 8 hex digits of the SHA-256 of the unsanitized name (checked with sha256sum).
func TestToolName(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct {
		prefix, tool, want string
	}{
		{"git__", "status", "git__status"},
		{"", "status", "status"},
		{"my.server__", "read file", "my_server__read_file"},
		{"p__", "é", "p___"}, // one rune, one "_"
		{"p__", "tool-1_x", "p__tool-1_x"},
		{"", strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{"", long, strings.Repeat("a", 55) + "_" + "6bd5e503"},
		{"x__", long, "x__" + strings.Repeat("a", 52) + "_" + "cf41f810"},
	} {
		got := config.ToolName(tc.prefix, tc.tool)
		if got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q; want %q", tc.prefix, tc.tool, got, tc.want)
		}
		if len(got) > config.MaxToolName {
			t.Errorf("ToolName(%q, %q) is %d bytes", tc.prefix, tc.tool, len(got))
		}
	}
}

// TestMayOwnToolName pins which backends a name not listed yet may belong
// to: the sanitized prefix begins it and it is longer.
func TestMayOwnToolName(t *testing.T) {
	for _, tc := range []struct {
		prefix, name string
		want         bool
	}{
		{"git__", "git__status", true},
		{"git__", "git__", false},
		{"git__", "gitx_status", false},
		{"my.server__", "my_server__read", true},
		{"my.server__", "my.server__read", false},
		{"", "anything", true},
		{"", "", false},
	} {
		if got := config.MayOwnToolName(tc.prefix, tc.name); got != tc.want {
			t.Errorf("MayOwnToolName(%q, %q) = %v; want %v", tc.prefix, tc.name, got, tc.want)
		}
	}
}
