// Command httprelay is the floor of any Streamable HTTP gateway in front of
// a stdio server, for the gateway hop benchmark
// (host/gateway/fast_bench_test.go, way "http-relay"): it starts the
// command its arguments name and serves POST /mcp on a loopback port
// (printed as "listening on http://ADDR" on stderr), writing each POSTed
// message to the child's stdin as a line and, for a request, answering
// with the child's next line as the one event of a text/event-stream
// response, on the HTTP request's goroutine; a notification or response
// gets 202. It parses nothing but whether a message has an "id" and a
// "method", keeps no session (it sends no Mcp-Session-Id), and serves one
// request at a time. A call through it pays what an HTTP hop and a third
// process on the path cost, and nothing a gateway does. It is not an MCP
// server anyone should run: no limits, no checks.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: httprelay COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	r := &relay{in: in, out: bufio.NewReaderSize(out, 64<<10)}
	fmt.Fprintf(os.Stderr, "listening on http://%s\n", ln.Addr())
	err = http.Serve(ln, r)
	_ = cmd.Process.Kill()
	fail(err)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "httprelay:", err)
	os.Exit(1)
}

type relay struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
}

func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &m)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if _, err := rl.in.Write(append(bytes.TrimSpace(body), '\n')); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if m.ID == nil || m.Method == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	line, err := rl.out.ReadBytes('\n')
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := append([]byte("event: message\ndata: "), bytes.TrimSpace(line)...)
	_, _ = w.Write(append(ev, "\n\n"...))
}
