package transport

//lint:file-ignore SA1019 logging is deprecated as of protocol 2026-07-28 (SEP-2577) but servers still use it

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/handoff"
	"github.com/toolhost/toolhost/internal/mcpwire"
)

// The Streamable HTTP tools/call hot path (issue 26, item 2): what
// stdio_fast.go does for stdio, for a POST. toolhost sends the tools/call
// POST itself, on the session the go-sdk opened (its Mcp-Session-Id, the
// negotiated Mcp-Protocol-Version, from 2026-07-28 the Mcp-Method and
// Mcp-Name headers and the per-request _meta the go-sdk sends), through
// the same http.Client (so the configured headers, the lost-session
// bookkeeping and the SSE tap that relays log messages and progress all
// apply), and decodes the answer — a JSON body or an event stream — with
// mcpwire.
//
// The go-sdk keeps every call this path cannot answer as it would: a
// transport with OAuth (the go-sdk's handler sets the token and runs the
// flow on 401/403), a client that answers elicitation, sampling or roots
// (the server's requests then come on the call's stream and must reach the
// go-sdk's handlers), a tool that runs as a task, a tool whose input schema
// carries x-mcp-header annotations (SEP-2243 parameter headers), a tool
// not seen in a tools/list yet, and, on a 2026-07-28 session, every call
// until a go-sdk request has shown its per-request _meta.
//
// On the call's event stream, what is not the answer is handled here as the
// go-sdk would with the options above: notifications/message goes to the
// transport's logger (the call got it from the tap), list_changed to
// OnListChanged, progress was delivered by the tap, a ping is answered, and
// any other request is answered "method not found" (such a client declares
// no capability that would make a server send one). A stream that ends
// before the answer is resumed with Last-Event-ID as the go-sdk resumes it
// (see stream); one that cannot be fails the call with ErrConnectionLost.

// httpFastCancelWait bounds the notifications/cancelled POST of a call
// whose context ended: 2s.
const httpFastCancelWait = 2 * time.Second

// maxFastEvent bounds one SSE event of a call's stream: the go-sdk's
// mcp.DefaultMaxEventSize.
var maxFastEvent = mcp.DefaultMaxEventSize

// sseReaders holds the buffered readers of calls' event streams.
var sseReaders sync.Pool

// httpFast is an HTTP transport's own tools/call path.
type httpFast struct {
	h    *HTTP
	tr   *taskRT // nil without the task layer: then nothing is known of tools, and the go-sdk calls
	next atomic.Uint64

	mu     sync.Mutex
	closed bool
	bg     sync.WaitGroup // cancellation POSTs in flight
}

// usable reports whether p may be called here on sess.
func (f *httpFast) usable(sess *session, p *mcp.CallToolParams) bool {
	if f == nil || f.tr == nil || f.h.oauth != nil || sess.init == nil {
		return false
	}
	if o := f.h.copts; o != nil && (o.Elicit != nil || o.Sample != nil || len(o.Roots) > 0 || o.ListRoots != nil) {
		return false
	}
	return f.tr.ts.plain(p.Name)
}

// callTool makes the call here when it can (ok true), else leaves it to
// the go-sdk (ok false, nothing sent).
func (f *httpFast) callTool(ctx context.Context, sess *session, p *mcp.CallToolParams) (res *mcp.CallToolResult, ok bool, err error) {
	if !f.usable(sess, p) {
		return nil, false, nil
	}
	pv := sess.init.ProtocolVersion
	if pv >= ProtocolNoPing {
		if p, ok = f.tr.meta.add(p); !ok {
			return nil, false, nil
		}
	}
	res, err = f.call(ctx, sess.cs.ID(), pv, p)
	return res, true, err
}

// fastHeaders sets the headers of a POST on session sid of protocol pv.
func fastHeaders(h http.Header, sid, pv string) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", pv)
	if sid != "" {
		h.Set("Mcp-Session-Id", sid)
	}
}

func (f *httpFast) call(ctx context.Context, sid, pv string, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	id := fastPrefix + strconv.FormatUint(f.next.Add(1), 10)
	enc, err := mcpwire.EncodeCallRequest(id, p)
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	defer enc.Free()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.h.url, bytes.NewReader(enc.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	fastHeaders(req.Header, sid, pv)
	if pv >= ProtocolNoPing {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", p.Name)
	}
	// The call waits from here on (the request is written inside Do):
	// the gateway's reading of its client goes on elsewhere meanwhile
	// (internal/handoff).
	handoff.Give(ctx)
	resp, err := f.h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			f.cancel(ctx, sid, pv, id)
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("sending %q: %w", "tools/call", err)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
	}()
	if err := checkFastResponse(resp, sid); err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var r mcpwire.Response
	switch ct {
	case "application/json":
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, f.failed(ctx, sid, pv, id, err)
		}
		var ok bool
		if r, ok = mcpwire.ParseResponse(bytes.TrimSpace(body)); !ok || string(r.ID) != strconv.Quote(id) {
			return nil, fmt.Errorf("calling %q: %w: the JSON response is not the answer to the call (%q)", "tools/call", ErrProtocol, clip(body, 120))
		}
	case "text/event-stream":
		if r, err = f.stream(ctx, sid, pv, id, resp.Body); err != nil {
			return nil, f.failed(ctx, sid, pv, id, err)
		}
	default:
		return nil, fmt.Errorf("calling %q: %w: unexpected content type %q (HTTP %d)", "tools/call", ErrProtocol, safeText(ct, 64), resp.StatusCode)
	}
	if ctx.Err() != nil {
		f.cancel(ctx, sid, pv, id)
		return nil, ctx.Err()
	}
	res, _, err := decodeReply(fastReply{result: r.Result, error: r.Error})
	return res, err
}

// failed is a read error of the call's response: the context's, or a lost
// connection.
func (f *httpFast) failed(ctx context.Context, sid, pv, id string, err error) error {
	if ctx.Err() != nil {
		f.cancel(ctx, sid, pv, id)
		return ctx.Err()
	}
	return fmt.Errorf("calling %q: %w: %w", "tools/call", mcp.ErrConnectionClosed, err)
}

// checkFastResponse classifies a non-2xx answer as the go-sdk's
// streamable client does (checkResponse): the JSON-RPC error in the body
// when there is one, ErrSessionMissing for a 404 on a session (HTTP.do
// then re-initializes and retries), the status otherwise.
func checkFastResponse(resp *http.Response, sid string) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("calling %q: %w: HTTP %d to a request", "tools/call", ErrProtocol, resp.StatusCode)
		}
		return nil
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return fmt.Errorf("calling %q: %s", "tools/call", http.StatusText(resp.StatusCode))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorPeek))
	if r, ok := mcpwire.ParseResponse(bytes.TrimSpace(body)); ok && r.Error != nil {
		if werr, err := mcpwire.DecodeError(r.Error); err == nil {
			return fmt.Errorf("calling %q: %w: %v", "tools/call", werr, http.StatusText(resp.StatusCode))
		}
	}
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		return fmt.Errorf("calling %q: failed to connect (session ID: %v): %w", "tools/call", sid, mcp.ErrSessionMissing)
	}
	return fmt.Errorf("calling %q: %v", "tools/call", http.StatusText(resp.StatusCode))
}

// httpFastMaxRetries bounds the reconnections of a call's event stream
// that make no progress: 2, the MaxRetries HTTP gives the go-sdk.
const httpFastMaxRetries = 2

// stream reads a call's event stream until the answer to id. A stream the
// server ends before the answer is resumed as the go-sdk resumes it (MCP
// 2025-11-25 basic/transports, "Resumability and Redelivery"): a GET with
// Last-Event-ID after the server's retry delay (else 1–2 s), at most
// httpFastMaxRetries times in a row without a new event ID; a stream
// without event IDs cannot be resumed and fails the call.
func (f *httpFast) stream(ctx context.Context, sid, pv, id string, body io.Reader) (mcpwire.Response, error) {
	prev, stalled := "", 0
	var resumed io.Closer // the current resumed stream's body
	defer func() {
		if resumed != nil {
			resumed.Close()
		}
	}()
	for {
		r, last, delay, ok, err := f.readStream(ctx, sid, pv, id, body)
		if err != nil || ok {
			return r, err
		}
		if last == "" {
			return mcpwire.Response{}, errors.New("the server ended the call's event stream before answering (request terminated without response)")
		}
		if last != prev {
			prev, stalled = last, 0
		} else if stalled++; stalled > httpFastMaxRetries {
			return mcpwire.Response{}, fmt.Errorf("the call's event stream was resumed %d times without progress", httpFastMaxRetries)
		}
		if resumed != nil {
			resumed.Close()
			resumed = nil
		}
		resp, err := f.resume(ctx, sid, pv, last, delay)
		if err != nil {
			return mcpwire.Response{}, err
		}
		resumed = resp.Body
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			return mcpwire.Response{}, fmt.Errorf("resuming the call's event stream: HTTP %d, %q", resp.StatusCode, safeText(ct, 64))
		}
		body = resp.Body
	}
}

// resume opens the continuation of a call's stream after lastID.
func (f *httpFast) resume(ctx context.Context, sid, pv, lastID string, delay time.Duration) (*http.Response, error) {
	if delay <= 0 {
		delay = reconnectDelay(1)
	}
	var last error
	for attempt := 1; attempt <= httpFastMaxRetries; attempt++ {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.h.url, nil)
		if err != nil {
			return nil, err
		}
		fastHeaders(req.Header, sid, pv)
		req.Header.Del("Content-Type")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastID)
		resp, err := f.h.client.Do(req)
		if err == nil {
			return resp, nil
		}
		last = err
		delay = reconnectDelay(attempt + 1)
	}
	return nil, fmt.Errorf("resuming the call's event stream failed after %d attempts: %w", httpFastMaxRetries, last)
}

// reconnectDelay is the go-sdk's delay before reconnection attempt n: 1s
// growing 1.5× per attempt, capped at 30s, plus full jitter.
func reconnectDelay(n int) time.Duration {
	d := time.Second
	for range n - 1 {
		d = d * 3 / 2
	}
	d = min(d, 30*time.Second)
	return d + rand.N(d)
}

// readStream reads one response's events until the answer to id (ok
// true), or the end of the stream: then last is the last event ID seen and
// delay the server's retry field (0: none).
func (f *httpFast) readStream(ctx context.Context, sid, pv, id string, body io.Reader) (r mcpwire.Response, last string, delay time.Duration, ok bool, err error) {
	br, _ := sseReaders.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(body, 4<<10)
	} else {
		br.Reset(body)
	}
	defer func() {
		br.Reset(nil)
		sseReaders.Put(br)
	}()
	var data []byte
	name := ""
	quoted := strconv.Quote(id)
	for {
		line, err := readLine(br, maxFastEvent)
		if err != nil {
			if err == io.EOF {
				return r, last, delay, false, nil
			}
			return r, last, delay, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			field, v, _ := bytes.Cut(line, []byte(":"))
			v = bytes.TrimPrefix(v, []byte(" "))
			switch string(field) {
			case "data":
				if len(data)+len(v) > maxFastEvent {
					return r, last, delay, false, fmt.Errorf("%w: an event of the call's stream is over %d bytes", ErrProtocol, maxFastEvent)
				}
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, v...)
			case "id":
				last = string(v)
			case "retry":
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
					delay = time.Duration(min(n, 60_000)) * time.Millisecond
				}
			case "event":
				name = string(v)
			}
			continue
		}
		// A blank line ends the event.
		msg := bytes.TrimSpace(data)
		data = nil
		evName := name
		name = ""
		if len(msg) == 0 || (evName != "" && evName != "message") {
			continue
		}
		if resp, isResp := mcpwire.ParseResponse(msg); isResp {
			if string(resp.ID) == quoted {
				return resp, last, delay, true, nil
			}
			continue // an answer to nothing of ours: dropped, as the go-sdk drops it
		}
		f.other(ctx, sid, pv, msg)
	}
}

// other handles a message on a call's stream that is not its answer.
func (f *httpFast) other(ctx context.Context, sid, pv string, msg []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == "" {
		return
	}
	if m.ID == nil {
		switch m.Method {
		case "notifications/message":
			var p mcp.LoggingMessageParams
			if json.Unmarshal(m.Params, &p) == nil {
				logServerMessage(f.h.logger, &p)
			}
		case "notifications/tools/list_changed":
			f.changed(ListTools)
		case "notifications/prompts/list_changed":
			f.changed(ListPrompts)
		case "notifications/resources/list_changed":
			f.changed(ListResources)
		}
		return
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if m.Method == "ping" {
		answer["result"] = struct{}{}
	} else {
		answer["error"] = map[string]any{"code": -32601, "message": "method not found: " + safeText(m.Method, 64)}
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return
	}
	f.post(ctx, sid, pv, b)
}

func (f *httpFast) changed(k ListKind) {
	if f.h.onChange != nil {
		f.h.onChange(k)
	}
}

// post sends one message (an answer or a notification) on the session,
// bounded by httpFastCancelWait.
func (f *httpFast) post(ctx context.Context, sid, pv string, body []byte) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), httpFastCancelWait)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.h.url, bytes.NewReader(body))
	if err != nil {
		return
	}
	fastHeaders(req.Header, sid, pv)
	resp, err := f.h.client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// cancel tells the server call id is no longer wanted, off the caller's
// way (as the go-sdk does); Close waits for it.
func (f *httpFast) cancel(ctx context.Context, sid, pv, id string) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": ctx.Err().Error()}})
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.bg.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.bg.Done()
		f.post(ctx, sid, pv, b)
	}()
}

// close waits for the cancellation POSTs in flight; none starts after.
func (f *httpFast) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.bg.Wait()
}
