// Package redact hides the secrets a URL may carry (userinfo, query values,
// fragment) wherever toolhost shows one: check, status, error messages and
// logs.
package redact

import (
	"net/url"
	"strings"

	"github.com/toolhost/toolhost/internal/lazyre"
)

// Mask replaces each hidden part.
const Mask = "REDACTED"

// URL returns raw with its userinfo and the value of every query parameter
// (and any fragment) replaced by Mask; the scheme, host, path and
// parameter names stay, so the URL is still recognisable. A URL that does
// not parse keeps only what comes before any "?", "#" or "@".
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return clipRaw(raw)
	}
	if u.User != nil {
		u.User = url.User(Mask)
	}
	if u.RawQuery != "" {
		var parts []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, _, hasValue := strings.Cut(kv, "=")
			if hasValue || k != "" {
				parts = append(parts, k+"="+Mask)
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Mask, ""
	}
	return u.String()
}

func clipRaw(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i] + "?" + Mask
	}
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		if s := strings.Index(raw, "://"); s >= 0 && s+3 <= at {
			raw = raw[:s+3] + Mask + raw[at:]
		}
	}
	return raw
}

var urlIn = lazyre.New(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// Text returns s with every URL in it passed through URL (an error message
// of net/http quotes the request URL, query and all).
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlIn.ReplaceAllStringFunc(s, URL)
}

// Error wraps err so that its message has its URLs redacted (Text); errors.Is
// and errors.As see err unchanged. Nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{err}
}

type redacted struct{ err error }

func (r *redacted) Error() string { return Text(r.err.Error()) }
func (r *redacted) Unwrap() error { return r.err }
