package host

import (
	"slices"
	"strings"
	"testing"
)

// TestSimilar: the typos models make get a suggestion, at most three,
// closest first.
func TestSimilar(t *testing.T) {
	names := []string{"textkit__word_count", "textkit__sha256", "textkit__sha1", "textkit__upper",
		"textkit__lower", "textkit__line_count", "fs__read_file", "fs__read_files", "fs__read_dir", "fs__read_link", "fs__write_file"}
	cases := []struct {
		name string
		want []string
	}{
		{"textkit__word-count", []string{"textkit__word_count"}},
		{"TextKit__Word_Count", []string{"textkit__word_count"}},
		{"textkit_sha256", []string{"textkit__sha256"}},
		{"textkit-sha256", []string{"textkit__sha256"}},
		{"textkit__sha2566", []string{"textkit__sha256"}},
		{"textkit_sha2566", []string{"textkit__sha256"}},
		{"sha256", []string{"textkit__sha256"}},
		{"textkt__sha256", []string{"textkit__sha256"}},
		{"textkit__uper", []string{"textkit__upper"}},
		{"textkit__uppre", []string{"textkit__upper"}},
		{"textkit__sah1", []string{"textkit__sha1"}},
		{"textkit__count", []string{"textkit__line_count", "textkit__word_count"}},
		// At most three, closest first, ties by name.
		{"fs__read_fil", []string{"fs__read_file", "fs__read_dir", "fs__read_files"}},
		{"fs__reed_file", []string{"fs__read_file", "fs__read_files"}},
		{"textkit__translate", nil},
		{"nothing__like_it", nil},
		{"", nil},
		{strings.Repeat("x", 100000), nil},
	}
	for _, tc := range cases {
		if got := similar(tc.name, names); !slices.Equal(got, tc.want) {
			t.Errorf("similar(%.40q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestErrorTexts: the errors a model reads say what happened and what to
// do, in words that fit any caller: no command, no method name.
func TestErrorTexts(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&UnknownToolError{Name: "textkit__sha2566", Similar: []string{"textkit__sha256"}},
			`unknown tool "textkit__sha2566"; did you mean textkit__sha256? Call a tool by its exact name`},
		{&UnknownToolError{Name: "textkit__translate"},
			`unknown tool "textkit__translate"; no available tool has a similar name: use a name from the list of available tools, exactly as listed`},
		{&ToolNotAllowedError{Name: "fs__write_file", Rule: `policy.deny[0] "*__write_*"`},
			`tool "fs__write_file" is not allowed in the policy (rule policy.deny[0] "*__write_*"); calling it again will fail the same way: use one of the tools in the list of available tools`},
		{&ToolNotAllowedError{Name: "fs__write_file", Profile: "review", Rule: `profiles.review.allow (no glob matches)`},
			`tool "fs__write_file" is not allowed in profile "review" (rule profiles.review.allow (no glob matches)); calling it again will fail the same way: use one of the tools in the list of available tools`},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
		if strings.Contains(tc.err.Error(), "toolhost") || strings.Contains(tc.err.Error(), "Tools") {
			t.Errorf("%q names a command or a method", tc.err)
		}
	}
}
