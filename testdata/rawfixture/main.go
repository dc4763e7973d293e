// Command rawfixture is an MCP server over stdio, written on raw JSON-RPC,
// that answers each tools/call with the result text its arguments give, byte
// for byte, so that a test knows exactly what the server sent (the go-sdk's
// servers encode results their own way). Each call is served on a goroutine
// of its own and waits delay_ms before it answers, so answers can come back
// in another order than the requests. It exits when stdin reaches EOF,
// dropping the answers still to come.
//
// Its one tool, raw, takes:
//
//	result    the JSON text of the result, written as is (required)
//	delay_ms  milliseconds to wait before answering (default 0)
//	stray     first write a response with this result to an ID no request has
//	dup       after the answer, write a second answer with the same ID and
//	          this result
//	garbage   first write this line (not JSON-RPC) to stdout
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var (
	outMu  sync.Mutex
	out    = bufio.NewWriter(os.Stdout)
	strays atomic.Int64
)

// write writes lines to stdout together, each followed by a newline.
func write(lines ...string) {
	outMu.Lock()
	defer outMu.Unlock()
	for _, l := range lines {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	out.Flush()
}

// answer is a JSON-RPC response line with result written as is.
func answer(id json.RawMessage, result string) string {
	return `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Result  string `json:"result"`
					DelayMS int    `json:"delay_ms"`
					Stray   string `json:"stray"`
					Dup     string `json:"dup"`
					Garbage string `json:"garbage"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // notifications
		}
		switch m.Method {
		case "initialize":
			write(answer(m.ID, `{"protocolVersion":"2025-11-25","serverInfo":{"name":"rawfixture","version":"1"},"capabilities":{"tools":{}}}`))
		case "ping":
			write(answer(m.ID, `{}`))
		case "tools/list":
			write(answer(m.ID, `{"tools":[{"name":"raw","inputSchema":{"type":"object"}}]}`))
		case "tools/call":
			a := m.Params.Arguments
			go func() {
				time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
				var lines []string
				if a.Garbage != "" {
					lines = append(lines, a.Garbage)
				}
				if a.Stray != "" {
					lines = append(lines, answer(json.RawMessage(strconv.Quote("stray-"+strconv.FormatInt(strays.Add(1), 10))), a.Stray))
				}
				lines = append(lines, answer(m.ID, a.Result))
				if a.Dup != "" {
					lines = append(lines, answer(m.ID, a.Dup))
				}
				write(lines...)
			}()
		default:
			write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}
