// Command pdkbench runs pdk benchmarks inside the guest, where the pdk's
// code really runs (a Wasm guest under a deadline-enforcing host is ≈20×
// slower per loop iteration than native Go, so native benchmarks mislead).
// Tool "bench" with arguments {"op": OP, "n": N, "text": S} runs operation
// OP N times and returns the guest's own time per operation in nanoseconds
// (text content, a decimal integer), measured with the guest's monotonic
// clock. Operations:
//
//   - "bind": c.Bind into struct{Text string; N int; Op string} (the
//     arguments of this very call);
//   - "unmarshal": the same with encoding/json directly (what Bind did
//     before its fast path);
//   - "text": build pdk.Text(S) (the result a tool returns);
//   - "none": an empty loop (the loop's own cost).
//
// sandbox's BenchmarkGuest calls it and reports guest-ns/op.
package main

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/toolhost/toolhost/pdk"
)

type args struct {
	Op   string `json:"op"`
	N    int    `json:"n"`
	Text string `json:"text"`
}

var sink any

func init() {
	pdk.Register(pdk.Tool{
		Name:        "bench",
		Description: "Run a pdk operation n times in the guest; returns ns per operation.",
		InputSchema: `{"type":"object","properties":{"op":{"type":"string"},"n":{"type":"integer"},"text":{"type":"string"}},"required":["op","n"]}`,
		Handler: func(c *pdk.Call) (*pdk.Result, error) {
			var a args
			if err := c.Bind(&a); err != nil {
				return nil, err
			}
			var f func() error
			switch a.Op {
			case "bind":
				f = func() error { var v args; err := c.Bind(&v); sink = v.Text; return err }
			case "unmarshal":
				f = func() error { var v args; err := json.Unmarshal(c.Arguments, &v); sink = v.Text; return err }
			case "text":
				f = func() error { sink = pdk.Text(a.Text); return nil }
			case "none":
				f = func() error { return nil }
			default:
				return pdk.Errorf("unknown op %q", a.Op), nil
			}
			start := time.Now()
			for range a.N {
				if err := f(); err != nil {
					return nil, err
				}
			}
			el := time.Since(start)
			return pdk.Text(strconv.FormatInt(el.Nanoseconds()/int64(max(a.N, 1)), 10)), nil
		},
	})
}

func main() {}
