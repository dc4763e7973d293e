// Command hosttools is the sandbox's fixture for the host-tools module
// (toolhost:host/tools): tool "relay" makes the requests it is given, in
// order, and returns every answer (a result, or the host's error code and
// message) as a JSON array.
package main

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/toolhost/toolhost/pdk"
)

type step struct {
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args"`
	Pad   int             `json:"pad"`   // bytes of padding added to the arguments
	Query string          `json:"query"` // a search instead of a call
	Times int             `json:"times"` // repeat the step (default 1)
}

type answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Code   string          `json:"code,omitempty"`
	Msg    string          `json:"message,omitempty"`
}

func init() {
	pdk.Register(pdk.Tool{
		Name:        "relay",
		Description: "Make host tool calls and return the answers.",
		InputSchema: `{"type":"object","properties":{"steps":{"type":"array"}}}`,
		Handler: func(c *pdk.Call) (*pdk.Result, error) {
			var in struct {
				Steps []step `json:"steps"`
			}
			if err := c.Bind(&in); err != nil {
				return nil, err
			}
			var out []answer
			for _, s := range in.Steps {
				for i := 0; i < max(1, s.Times); i++ {
					args := s.Args
					if s.Pad > 0 {
						args = json.RawMessage(`{"pad":"` + strings.Repeat("x", s.Pad) + `"}`)
					}
					var res json.RawMessage
					var err error
					if s.Query != "" {
						res, err = pdk.SearchHostTools(s.Query, 5)
					} else {
						res, err = pdk.CallHostTool(s.Name, args)
					}
					var he *pdk.HostToolError
					switch {
					case errors.As(err, &he):
						out = append(out, answer{Code: he.Code, Msg: he.Message})
					case err != nil:
						out = append(out, answer{Code: "?", Msg: err.Error()})
					default:
						out = append(out, answer{Result: res})
					}
				}
			}
			b, _ := json.Marshal(out)
			return pdk.Text(string(b)), nil
		},
	})
}

func main() {}
