package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://host/mcp?api_key=s3cret":             "https://host/mcp?api_key=REDACTED",
		"http://user:pw@127.0.0.1:1/mcp?a=1&b=2#frag": "http://REDACTED@127.0.0.1:1/mcp?a=REDACTED&b=REDACTED#REDACTED",
		"http://127.0.0.1:3001/mcp":                   "http://127.0.0.1:3001/mcp",
		"http://[bad/x?k=s3cret":                      "http://[bad/x?REDACTED",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	base := errors.New("base")
	err := Error(fmt.Errorf(`Post "http://u:p@h/mcp?api_key=s3cret": dial: %w`, base))
	if strings.Contains(err.Error(), "s3cret") || !errors.Is(err, base) {
		t.Errorf("Error: %v", err)
	}
}
