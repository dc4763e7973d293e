package pdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/toolhost/toolhost/pdk/internal/abi"
)

// Config returns the value of a configuration key the host gave the plugin
// (the [plugins.NAME] config table), and whether it is set.
func Config(key string) (string, bool) { return abi.Config(key) }

// Level is a log level.
type Level int32

// Log levels, lowest first.
const (
	LevelTrace Level = Level(abi.LevelTrace)
	LevelDebug Level = Level(abi.LevelDebug)
	LevelInfo  Level = Level(abi.LevelInfo)
	LevelWarn  Level = Level(abi.LevelWarn)
	LevelError Level = Level(abi.LevelError)
)

// Log sends msg to the host's log for this plugin at level. Messages below
// the host's level are dropped before they are copied out.
func Log(level Level, msg string) { abi.Log(int32(level), msg) }

// Logf is Log with fmt.Sprintf formatting; it skips formatting when the
// host would drop the message.
func Logf(level Level, format string, args ...any) {
	if int32(level) < abi.LogLevel() {
		return
	}
	abi.Log(int32(level), fmt.Sprintf(format, args...))
}

// Errors returned by HTTP.
var (
	// ErrBadRequest: the request was refused before it reached the host
	// (URL not absolute http(s), bad method).
	ErrBadRequest = errors.New("pdk: bad HTTP request")
	// ErrNoResponse: the host returned no status code.
	ErrNoResponse = errors.New("pdk: no HTTP response")
)

// Request is an HTTP request made through the host.
type Request struct {
	// Method is the HTTP method; empty means GET.
	Method string
	// URL is an absolute http or https URL. Its host must be in the
	// plugin's allowed_hosts.
	URL string
	// Header holds request headers, one value per name.
	Header map[string]string
	// Body is the request body; nil for none.
	Body []byte
}

// Response is the host's answer to a Request.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers with lower-case names, multiple
	// values joined by ",". It is nil when the host does not pass response
	// headers to plugins.
	Header map[string]string
	// Body is the whole response body (the host caps its size).
	Body []byte
}

// HTTP performs req through the host (Extism http_request). Any status code is
// a response, not an error: check Response.Status.
//
// The host follows redirects and enforces allowed_hosts, a response size cap
// and the call's deadline. A request it refuses (host not allowed, connection
// failure, body over the cap) aborts the whole tool call: the Extism kernel
// traps, it does not return an error to the plugin. HTTP only returns an error
// for a request it can tell is malformed before sending it (ErrBadRequest).
func HTTP(req Request) (*Response, error) {
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = "GET"
	}
	if strings.ContainsAny(method, " \t\r\n") {
		return nil, fmt.Errorf("%w: method %q", ErrBadRequest, req.Method)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: URL %q is not an absolute http or https URL", ErrBadRequest, req.URL)
	}
	rj, err := json.Marshal(struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers,omitempty"`
	}{req.URL, method, req.Header})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	status, hdr, body := abi.HTTP(rj, req.Body)
	if status == 0 {
		return nil, ErrNoResponse
	}
	resp := &Response{Status: int(status), Body: body}
	if len(hdr) > 0 {
		_ = json.Unmarshal(hdr, &resp.Header) // a malformed header object is dropped, not fatal
	}
	return resp, nil
}
