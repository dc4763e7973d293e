// Command pdkecho is the trivial plugin written with our pdk that the host
// benchmarks call: tool "echo" returns arguments.text as text content.
package main

import "github.com/toolhost/toolhost/pdk"

func init() {
	pdk.Register(pdk.Tool{
		Name:        "echo",
		Description: "Echo the text back.",
		InputSchema: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		Handler: func(c *pdk.Call) (*pdk.Result, error) {
			var in struct {
				Text string `json:"text"`
			}
			if err := c.Bind(&in); err != nil {
				return nil, err
			}
			return pdk.Text(in.Text), nil
		},
	})
}

func main() {}
