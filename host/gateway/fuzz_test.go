package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHTTPHandler posts arbitrary bodies, with and without a session, to
// the gateway's HTTP handler: it must answer every one with a status it
// documents, never panic, and keep serving.
func FuzzHTTPHandler(f *testing.F) {
	for _, seed := range []string{
		initialize,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__echo","arguments":[1,2]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"fixture://readme"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"fx__greeting","arguments":{"name":1}}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`{"jsonrpc":"1.0","id":null}`, `{}`, `[]`, `null`, `"`, "\x00\xff", strings.Repeat("[", 10000),
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	fx := startFuzz(f)
	handler := fx.g.Handler()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, request(initialize, ""))
	sid := rec.Header().Get("Mcp-Session-Id")
	handler.ServeHTTP(httptest.NewRecorder(), request(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid))
	f.Fuzz(func(t *testing.T, body string, inSession bool) {
		s := ""
		if inSession {
			s = sid
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, request(body, s))
		switch rec.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusNotFound,
			http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
			http.StatusTooManyRequests: // max_sessions
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
		// Still serving.
		rec = httptest.NewRecorder()
		handler.ServeHTTP(rec, request(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"alive"}}}`, sid))
		if !strings.Contains(rec.Body.String(), "alive") {
			t.Fatalf("after %q the gateway no longer answers: %d %s", body, rec.Code, rec.Body.String())
		}
	})
}

func request(body, session string) *http.Request {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return r
}
