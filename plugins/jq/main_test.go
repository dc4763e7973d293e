//go:build !wasip1

package main

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/pdk/pdktest"
)

func TestJQ(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    string
		isError bool
		want    string // structuredContent, or a substring of the error
	}{
		{"path", `{"filter":".a.b","input":{"a":{"b":[1,2]}}}`, false, `{"results":[[1,2]],"truncated":false}`},
		{"string of JSON", `{"filter":".[0]","input":"[3,4]"}`, false, `{"results":[3],"truncated":false}`},
		{"JSON lines", `{"filter":".x","input":"{\"x\":1}\n{\"x\":2}"}`, false, `{"results":[1,2],"truncated":false}`},
		{"raw input", `{"filter":"length","input":"abc","raw_input":true}`, false, `{"results":[3],"truncated":false}`},
		{"null input", `{"filter":"[1,2] | add"}`, false, `{"results":[3],"truncated":false}`},
		{"vars", `{"filter":"$a * $b","vars":{"a":6,"$b":7}}`, false, `{"results":[42],"truncated":false}`},
		{"big int exact", `{"filter":".","input":123456789012345678901234567890}`, false, `{"results":[123456789012345678901234567890],"truncated":false}`},
		{"max results", `{"filter":"range(5)","max_results":2}`, false, `{"results":[0,1],"truncated":true}`},
		{"no results", `{"filter":"empty"}`, false, `{"results":[],"truncated":false}`},
		{"env is empty", `{"filter":"$ENV | length"}`, false, `{"results":[0],"truncated":false}`},
		{"syntax", `{"filter":"]["}`, true, "syntax error"},
		{"runtime", `{"filter":".a","input":[1]}`, true, "expected an object but got: array"},
		{"not JSON", `{"filter":".","input":"{nope"}`, true, "raw_input"},
		{"empty filter", `{"filter":" "}`, true, "filter is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := pdktest.CallTool("jq", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError != tt.isError {
				t.Fatalf("isError=%v: %s", out.IsError, out.Raw)
			}
			if tt.isError {
				if !strings.Contains(out.Text, tt.want) {
					t.Errorf("error %q does not mention %q", out.Text, tt.want)
				}
				return
			}
			if string(out.Structured) != tt.want {
				t.Errorf("got %s, want %s", out.Structured, tt.want)
			}
		})
	}
}

func TestCompiledProgramReuse(t *testing.T) {
	for _, in := range []string{"1 2", "3 4"} {
		out, err := pdktest.CallTool("jq", map[string]any{"filter": "[., input]", "input": in})
		if err != nil || out.IsError {
			t.Fatalf("%v %s", err, out.Raw)
		}
		want := map[string]string{"1 2": `{"results":[[1,2]],"truncated":false}`, "3 4": `{"results":[[3,4]],"truncated":false}`}[in]
		if string(out.Structured) != want {
			t.Errorf("input %q: got %s, want %s", in, out.Structured, want)
		}
	}
}
