//go:build !wasip1

package pdktest

import (
	"encoding/json"
	"testing"
)

// TestCheckArguments: the host's text for each keyword pdktest applies.
func TestCheckArguments(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["user"],
		"properties":{
			"user":{"type":"object","required":["name","age"],"properties":{"name":{"type":"string","minLength":1,"pattern":"^[A-Z]"},"age":{"type":"integer","minimum":0,"maximum":150}}},
			"tags":{"type":"array","maxItems":2,"items":{"type":"string","enum":["a","b"]}},
			"mode":{"const":"fast"},
			"ratio":{"type":"number","exclusiveMaximum":1}}}`)
	cases := []struct{ args, want string }{
		{`{"user":{"name":"Ada","age":36}}`, ""},
		{`{"user":{"name":"Ada","age":36.0}}`, ""},
		{`{"user":{"name":"Ada","age":"old"}}`, "invalid arguments for t: user.age: got string, want integer"},
		{`{"user":{"name":"Ada","age":1.5}}`, "invalid arguments for t: user.age: got number, want integer"},
		{`{"user":{"name":"Ada","age":151}}`, "invalid arguments for t: user.age: maximum: got 151, want 150"},
		{`{"user":{"name":"ada","age":-1}}`, "invalid arguments for t: user.age: minimum: got -1, want 0; user.name: 'ada' does not match pattern '^[A-Z]'"},
		{`{"user":{}}`, "invalid arguments for t: user: missing properties 'name', 'age'"},
		{`{"user":{"name":"","age":1},"x":1,"y":2}`, "invalid arguments for t: user.name: minLength: got 0, want 1; user.name: '' does not match pattern '^[A-Z]'; (arguments): additional properties 'x', 'y' not allowed"},
		{`{"user":{"name":"A","age":1},"tags":["a","c","b"]}`, "invalid arguments for t: tags: maxItems: got 3, want 2; tags[1]: value must be one of 'a', 'b'"},
		{`{"user":{"name":"A","age":1},"mode":"slow","ratio":1}`, "invalid arguments for t: mode: value must be 'fast'; ratio: exclusiveMaximum: got 1, want 1"},
	}
	for _, tc := range cases {
		if got := checkArguments("t", schema, json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.args, got, tc.want)
		}
	}
}
