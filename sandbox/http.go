package sandbox

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/toolhost/toolhost/sandbox/egress"
)

// httpPolicy decides which URLs a plugin's http_request may reach: the
// allowed_hosts allowlist of package sandbox/egress (its package comment
// gives the grammar and the refused address ranges), shared with the
// native servers' relay. The zero httpPolicy allows nothing.
type httpPolicy struct {
	p *egress.Policy
}

func newHTTPPolicy(entries []string) (*httpPolicy, error) {
	p, err := egress.New(entries)
	if err != nil {
		return nil, err
	}
	return &httpPolicy{p}, nil
}

// deniedError is a policy refusal as plugins report it (an
// *egress.DeniedError's message, or the sandbox's own): it wraps
// ErrHostDenied.
type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }
func (e *deniedError) Unwrap() error { return ErrHostDenied }

// checkURL applies the scheme and allowlist rules to one URL (the first or a
// redirect target).
func (p *httpPolicy) checkURL(u *url.URL) error {
	if err := p.p.CheckURL(u); err != nil {
		return &deniedError{err.Error()}
	}
	return nil
}

// newHTTPClient returns the client behind a plugin's http_request. It never
// uses a proxy (a proxy would hide the destination from the address check),
// re-checks the allowlist on every redirect (at most 10) and at every dial,
// and checks the resolved address of every connection (egress.Policy's
// DialContext and CheckRedirect).
func newHTTPClient(p *httpPolicy) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, CheckRedirect: p.p.CheckRedirect}
}

// asDenied finds a policy refusal in an HTTP client error chain.
func asDenied(err error) (*deniedError, bool) {
	var d *deniedError
	if errors.As(err, &d) {
		return d, true
	}
	var e *egress.DeniedError
	if errors.As(err, &e) {
		return &deniedError{e.Error()}, true
	}
	return nil, false
}
