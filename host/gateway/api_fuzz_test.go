package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzInvokeBody: whatever body POST /api/v1/mcp/invoke gets, it answers
// JSON with an error kind (or an InvokeResponse), with a status of the
// API's table, and never panics; the fixture's hazardous tools are not
// reachable (bob's view, the global policy, denies them).
func FuzzInvokeBody(f *testing.F) {
	for _, seed := range []string{
		`{"name":"fx__echo","params":{"text":"x"}}`,
		`{"server_id":"fx","tool_name":"add","params":{"a":1,"b":2}}`,
		`{"server_id":"fx","tool_name":"add","params":{"a":"1"}}`,
		`{"name":"fx__echo","params":[1]}`, `{"name":"fx__nope"}`, `{"name":"fx__hang"}`,
		`{"name":"fx__echo","colour":1}`, `{"correlation_id":7}`, `{}`, `[]`, `null`, `"`, "\x00\xff",
		`{"name":"fx__echo","params":` + strings.Repeat("[", 10001) + `}`,
	} {
		f.Add(seed)
	}
	fx := startFuzz(f)
	handler := fx.g.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "crash") || strings.Contains(body, "sleep") || strings.Contains(body, "freeze") {
			t.Skip("a tool that stops or stalls the fixture")
		}
		req := httptest.NewRequest("POST", "/api/v1/mcp/invoke", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bob-token-0123456789ab")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
			http.StatusRequestEntityTooLarge, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		var out struct {
			Error *struct {
				Kind string `json:"kind"`
			} `json:"error"`
			Success bool `json:"success"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("not JSON for %q: %v: %s", body, err, rec.Body)
		}
		if (rec.Code == 200) != (out.Error == nil) || (rec.Code == 200) != out.Success {
			t.Fatalf("status %d with error %v, success %v: %s", rec.Code, out.Error, out.Success, rec.Body)
		}
	})
}
