package host_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestHTTPSessionLost400: the npm server-everything (streamableHttp) answers
// a request for a session it does not know with 400 {"message":"Bad
// Request: No valid session ID provided"}, not the 404 of the spec. toolhost
// recovers as for 404: a new session and one resend, for every call in
// flight, without failing a call or restarting the backend.
func TestHTTPSessionLost400(t *testing.T) {
	everything := testutil.StartEverythingHTTP(t)
	target, _ := url.Parse(everything)
	target.Path = ""
	// A proxy that can make the server forget the sessions seen so far: it
	// then sends them under an ID the server never issued, and the server
	// answers as it does for a session it lost (after a restart).
	var mu sync.Mutex
	seen, dropped := map[string]bool{}, map[string]bool{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		mu.Lock()
		gone := dropped[id]
		if id != "" {
			seen[id] = true
		}
		mu.Unlock()
		if gone {
			r.Header.Set("Mcp-Session-Id", "00000000-0000-4000-8000-000000000000")
		}
		proxy.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	h := newHost(t, fmt.Sprintf(`
[servers.ev]
url = "http://%s/mcp"
`, ln.Addr()))
	ctx := context.Background()
	call := func(text string) error {
		res, err := h.CallTool(ctx, "ev__echo", map[string]any{"message": text})
		if err == nil && res.IsError {
			err = fmt.Errorf("echo: tool error %q", resultString(res))
		}
		return err
	}
	if err := call("before"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for id := range seen {
		dropped[id] = true
	}
	mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call(fmt.Sprint("after ", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d after the server lost the session: %v", i, err)
		}
	}
	if err := call("again"); err != nil {
		t.Fatalf("call on the new session: %v", err)
	}
	if st := statusOf(h, "ev"); st.State != host.StateReady || st.Restarts != 0 {
		t.Errorf("a re-initialized session is not a restart: %+v", st)
	}
}
