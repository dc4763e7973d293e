package gateway

import (
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolhost/toolhost/host"
)

// Rate limits (issue 25, item 4) at the gateway: a call refused by a rate
// limit (host.RateLimitedError) is answered over REST with 429 and a
// Retry-After header (RFC 9110, section 10.2.3: delay-seconds, a whole
// number), and over MCP with an isError result whose _meta carries
// host.MetaRetryAfter (host.ErrorResult). A request refused by the
// client's max_concurrent wraps host.ErrRateLimited too (tooManyError).

// setRetryAfter sets the Retry-After header of the response to a call
// that err refused by a rate limit.
func setRetryAfter(w http.ResponseWriter, err error) {
	if s, ok := host.RetryAfter(err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(s))
	}
}

// tooManyError is the refusal of a request beyond max_concurrent or
// max_sessions: the JSON-RPC error CodeTooManyRequests (the go-sdk sends
// the code of the *jsonrpc.Error it wraps and this error's message, the
// same) that is also host.ErrRateLimited (kind rate_limited).
type tooManyError struct{ msg string }

func tooMany(msg string) error { return &tooManyError{msg: msg} }

func (e *tooManyError) Error() string { return e.msg }

// Unwrap returns the JSON-RPC error and host.ErrRateLimited.
func (e *tooManyError) Unwrap() []error {
	return []error{&jsonrpc.Error{Code: CodeTooManyRequests, Message: e.msg}, host.ErrRateLimited}
}
