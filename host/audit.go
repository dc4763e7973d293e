package host

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/auditkey"
	"github.com/toolhost/toolhost/internal/jsonx"
)

// Audit outcomes (AuditRecord.Outcome).
const (
	OutcomeOK               = "ok"                // the tool ran and succeeded
	OutcomeToolError        = "tool_error"        // the tool ran and returned isError
	OutcomeDenied           = "denied"            // the policy refused the call (ErrToolNotAllowed), or the tool is disabled at run time (ErrToolDisabled)
	OutcomeInvalidArguments = "invalid_arguments" // not a JSON object, or not valid for the inputSchema
	OutcomeTimeout          = "timeout"           // the deadline passed (ErrTimeout)
	OutcomeCanceled         = "canceled"          // the caller cancelled
	OutcomeBackendError     = "backend_error"     // the call could not be made or its result was refused
	OutcomeUnknownTool      = "unknown_tool"      // no such tool in the catalogue
	OutcomeCircuitOpen      = "circuit_open"      // refused fast by an open circuit breaker (ErrCircuitOpen)
	OutcomeRateLimited      = "rate_limited"      // refused by a rate limit (ErrRateLimited; ratelimit.go)
)

// AuditRecord is one call attempt, as written to [host] audit_log (one JSON
// object per line) and passed to Options.Audit. It never holds a secret of
// the configuration (env, headers, plugin config values are replaced by
// "[REDACTED]" wherever they appear) nor the result itself.
type AuditRecord struct {
	Time    time.Time `json:"time"`    // when the call started (UTC)
	Profile string    `json:"profile"` // "" for the Host's own view
	// Client names the gateway client the call was made for (a
	// [serve.clients.NAME], or "stdio"); empty for calls made in Go
	// without WithClient. Never a token.
	Client string `json:"client,omitempty"`
	// Op is the MCP operation when it is not a tool call: "prompts/get"
	// (Prompt names the prompt), "resources/read" (URI names the
	// resource), or a request a server made of the host: OpElicit or
	// OpSample (Backend names the server, Tool, Profile and Client the
	// call it was made for, when known; see Options.Elicit), or an
	// operator's action (Host.AuditAdmin): "admin/" + the action
	// ("admin/restart", "admin/enable", "admin/disable",
	// "admin/enable_tool", "admin/disable_tool", "admin/reload"), with
	// Backend or Tool naming its target. Empty for tools/call, whose
	// record names the Tool.
	Op      string `json:"op,omitempty"`
	Tool    string `json:"tool,omitempty"`    // catalogue name as called
	Prompt  string `json:"prompt,omitempty"`  // catalogue name of the prompt
	URI     string `json:"uri,omitempty"`     // the resource's URI
	Backend string `json:"backend,omitempty"` // empty for an unknown tool
	// Decision is "allow" or "deny" ("none" for an unknown tool), and Rule
	// the rule that made it (see Decision.Rule).
	Decision string `json:"decision"`
	Rule     string `json:"rule,omitempty"`
	Outcome  string `json:"outcome"`         // one of the Outcome constants
	Error    string `json:"error,omitempty"` // the error or the validation message
	// LatencyMS is the time from the call's start to its result, in
	// milliseconds (fractional).
	LatencyMS float64 `json:"latency_ms"`
	// ArgsHMAC is the hex HMAC-SHA-256 (RFC 2104) of the canonical
	// arguments, under the installation's audit key (Options.AuditKey,
	// Options.AuditKeyFile): the JSON object with keys sorted at every
	// level and no insignificant space (numbers as sent), before
	// redaction. For arguments that are not a JSON object, the HMAC of the
	// bytes as given. Equal arguments have equal hashes under one key, so
	// records can be correlated; without the key, a redacted value cannot
	// be recovered by hashing candidates (a plain hash of a 4-digit PIN
	// can). Empty when the record has no arguments (resources/read).
	ArgsHMAC string `json:"args_hmac"`
	// KeyID identifies the key ArgsHMAC was computed with (16 hex digits;
	// see Host.AuditKeyID): records written before a key rotation (toolhost
	// audit rotate-key) have another. Empty when ArgsHMAC is.
	KeyID string `json:"key_id,omitempty"`
	// Args is the canonical arguments with the values of sensitive keys
	// replaced by "[REDACTED]"; null when the arguments are not an object.
	Args json.RawMessage `json:"args"`
	// ResultBytes is the size in bytes of the result's JSON text: for a
	// plugin, its output as the guest wrote it; for a stdio server, the
	// "result" member of its response as the server wrote it; for an HTTP
	// server, the result's encoding by encoding/json (0 without a result).
	ResultBytes int `json:"result_bytes"`
	// Retries is how many times the call was sent again after a failure
	// that never reached the backend, or (for a [tools.NAME] retry = true
	// tool) after any backend failure.
	Retries int `json:"retries,omitempty"`
	// Fallback names the tool whose result was returned instead, when this
	// call failed and its [tools.NAME] fallback was used; that call has
	// its own record, whose FallbackFor names this tool.
	Fallback    string `json:"fallback,omitempty"`
	FallbackFor string `json:"fallback_for,omitempty"`
	// TraceID is the W3C trace id (32 lowercase hex digits) of the call's
	// OpenTelemetry span (layer_trace.go), when it was traced: the
	// client's trace when it sent a _meta.traceparent, the embedder's
	// when the context carried a span. Empty when tracing is off.
	TraceID string `json:"trace_id,omitempty"`
	// CorrelationID ties the record to the request that caused it: the id
	// WithCorrelationID put in the context (the REST API's invoke passes
	// its correlation_id, so its answer and the record agree), else, when
	// records go to the store ([store] audit), a new one of 32 hex digits,
	// time-ordered (store.TimeID); empty otherwise.
	CorrelationID string `json:"correlation_id,omitempty"`
	// Parent is the CorrelationID of the call this one was made inside:
	// an inner call of a code-mode run_code names its run (WithParent;
	// host/codemode.go). Empty for a call a client made itself.
	Parent string `json:"parent,omitempty"`

	// Idempotency (issue 25, item 5): what became of the call's
	// idempotency key (WithIdempotencyKey): IdemFirst, IdemReplay,
	// IdemIgnored or IdemNotStored; empty without a key.
	Idempotency string `json:"idempotency,omitempty"`
}

// AuditAdmin writes the audit record of an operator's action (the REST
// API's POST /api/v1/servers/{name}/restart and the like): Op is "admin/"
// + action, Client the client WithClient put in ctx, Backend (or, for an
// action on a tool, Tool) the target ("" for a reload), Decision "allow",
// Outcome "ok", or "backend_error" with Error when err is not nil. It is
// logged too (Info, or Warn for a failure). Nothing is written when
// auditing is off, but the log line is.
func (h *Host) AuditAdmin(ctx context.Context, action, target string, err error) {
	rec := AuditRecord{Time: time.Now().UTC(), Client: clientOf(ctx), Op: "admin/" + action, Decision: "allow", Outcome: OutcomeOK,
		CorrelationID: correlationOf(ctx)}
	if strings.HasSuffix(action, "_tool") {
		rec.Tool = target
	} else {
		rec.Backend = target
	}
	log := h.logger.Info
	if err != nil {
		rec.Outcome, rec.Error, log = OutcomeBackendError, err.Error(), h.logger.Warn
	}
	log("operator action", "action", action, "target", target, "client", rec.Client, "error", rec.Error)
	if h.audit.enabled() {
		h.audit.write(&rec)
	}
}

type clientKey struct{}

// WithClient returns a copy of ctx that names the client a call is made for
// (the gateway passes a [serve.clients.NAME]); the audit record of every
// CallTool, GetPrompt and ReadResource made with it says so in Client.
func WithClient(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, clientKey{}, name)
}

// clientOf returns the name WithClient put in ctx, or "".
func clientOf(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

type correlationKey struct{}

// WithCorrelationID returns a copy of ctx whose calls' audit records carry
// id as their CorrelationID (see AuditRecord.CorrelationID). An empty id
// leaves the choice to the host.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// correlationOf returns the id WithCorrelationID put in ctx, or "".
func correlationOf(ctx context.Context) string {
	s, _ := ctx.Value(correlationKey{}).(string)
	return s
}

// redactKeys are the built-in sensitive key parts (matched
// case-insensitively anywhere in a key).
var redactKeys = []string{"password", "secret", "token", "key", "credential", "authorization"}

const redacted = "[REDACTED]"

// auditor writes audit records. It is enabled when there is a file or a hook.
type auditor struct {
	f      *os.File
	path   string
	hook   func(AuditRecord)
	extra  []*regexp.Regexp
	scrub  *strings.Replacer // config secrets -> [REDACTED]; nil if none
	logger hclog.Logger
	store  *auditStore // the store's writer ([store] audit); nil when off (auditstore.go)

	keyID string    // auditkey.ID of the HMAC key
	macs  sync.Pool // hash.Hash: HMAC-SHA-256 under the key

	mu       sync.Mutex // serialises writes to f
	failures atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds of the last failure logged
}

func (a *auditor) enabled() bool {
	return a != nil && (a.f != nil || a.hook != nil || a.store != nil)
}

// newAuditor opens the audit log for appending (0600), loads (or creates)
// the HMAC key of the arguments' hashes when auditing is on, and collects
// the configuration's secret values.
func newAuditor(cfg *config.Config, opts *Options, logger hclog.Logger) (*auditor, error) {
	a := &auditor{hook: opts.Audit, extra: cfg.Host.AuditRedactRE, logger: logger.Named("audit"), path: cfg.Host.AuditLog}
	// The secrets are collected even when auditing is off: a span's error
	// message (layer_trace.go) is scrubbed with them too.
	a.scrub = secretScrubber(cfg)
	if a.path == "" && a.hook == nil && !storeAuditOn(cfg, opts) {
		return a, nil
	}
	key, err := auditKey(opts)
	if err != nil {
		return nil, err
	}
	a.keyID = auditkey.ID(key)
	a.macs.New = func() any { return hmac.New(sha256.New, key) }
	if a.path != "" {
		f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("%w: %w; fix [host] audit_log (the directory must exist and be writable) or remove it", ErrAudit, err)
		}
		a.f = f
	}
	return a, nil
}

// auditKey returns Options.AuditKey, else the key of Options.AuditKeyFile
// (default auditkey.DefaultPath), created there if missing.
func auditKey(opts *Options) ([]byte, error) {
	if opts.AuditKey != nil {
		if len(opts.AuditKey) < auditkey.Size {
			return nil, fmt.Errorf("%w: Options.AuditKey has %d bytes; an HMAC-SHA-256 key needs at least %d random bytes", ErrAudit, len(opts.AuditKey), auditkey.Size)
		}
		return slices.Clone(opts.AuditKey), nil
	}
	path := opts.AuditKeyFile
	if path == "" {
		p, err := auditkey.DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAudit, err)
		}
		path = p
	}
	key, err := auditkey.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("%w: the key of the arguments' hashes: %w", ErrAudit, err)
	}
	return key, nil
}

// DefaultAuditKeyFile is where a Host keeps the key of the audit records'
// ArgsHMAC when Options.AuditKey and Options.AuditKeyFile are not set:
// os.UserConfigDir()/toolhost/audit.key ($XDG_CONFIG_HOME/toolhost/audit.key
// or ~/.config/toolhost/audit.key on Linux), 64 hex digits, mode 0600 in a
// directory of mode 0700.
func DefaultAuditKeyFile() (string, error) { return auditkey.DefaultPath() }

// RotateAuditKey replaces the audit key in path (DefaultAuditKeyFile when
// empty) with a new random one, atomically, and returns the IDs (see
// AuditRecord.KeyID) of the old key ("" when there was none usable) and the
// new one. The old key is not kept. A Host that is running keeps the key it
// loaded until it is restarted. `toolhost audit rotate-key` runs it.
func RotateAuditKey(path string) (oldID, newID string, err error) {
	if path == "" {
		if path, err = auditkey.DefaultPath(); err != nil {
			return "", "", err
		}
	}
	old, key, err := auditkey.Rotate(path)
	if err != nil {
		return "", "", err
	}
	if old != nil {
		oldID = auditkey.ID(old)
	}
	return oldID, auditkey.ID(key), nil
}

// AuditKeyID returns the ID of the key the audit records' ArgsHMAC are
// computed with (AuditRecord.KeyID), or "" when auditing is off.
func (h *Host) AuditKeyID() string {
	if h.audit == nil {
		return ""
	}
	return h.audit.keyID
}

// secretScrubber replaces every value of a server's env and headers and of a
// plugin's config (4 characters or longer) by [REDACTED].
func secretScrubber(cfg *config.Config) *strings.Replacer {
	var vals []string
	add := func(m map[string]string) {
		for _, v := range m {
			if len(v) >= 4 {
				vals = append(vals, v)
			}
			// "Bearer TOKEN": the token alone too.
			if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= 4 {
				vals = append(vals, tok)
			}
		}
	}
	for _, s := range cfg.Servers {
		add(s.Env)
		add(s.Headers)
	}
	for _, p := range cfg.Plugins {
		add(p.Config)
	}
	for _, c := range cfg.Serve.Clients {
		add(map[string]string{"token": c.Token})
	}
	if len(vals) == 0 {
		return nil
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	vals = slices.Compact(vals)
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, redacted)
	}
	return strings.NewReplacer(pairs...)
}

func (a *auditor) close() error {
	if a != nil && a.store != nil {
		// Flushed before Host.Close closes the store.
		a.store.close()
	}
	if a == nil || a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.f.Close()
	a.f = nil
	return err
}

// write delivers rec to the hook and the file. A failed write is counted
// and logged at Error level, at most once every 10 seconds; it never fails
// the call.
func (a *auditor) write(rec *AuditRecord) {
	if rec.ArgsHMAC != "" {
		rec.KeyID = a.keyID
	}
	if a.scrub != nil {
		rec.Error = a.scrub.Replace(rec.Error)
	}
	if a.store != nil && rec.CorrelationID == "" {
		rec.CorrelationID = store.TimeID(rec.Time)
	}
	if a.hook != nil {
		a.hook(*rec)
	}
	if a.store != nil {
		a.store.put(rec)
	}
	if a.f == nil {
		return
	}
	line := appendRecord(make([]byte, 0, 512+len(rec.Args)+len(rec.Error)), rec)
	a.mu.Lock()
	var err error
	if a.f == nil {
		err = errors.New("audit log closed")
	} else {
		_, err = a.f.Write(line)
	}
	a.mu.Unlock()
	if err != nil {
		n := a.failures.Add(1)
		now := time.Now().UnixNano()
		if last := a.lastLog.Load(); now-last >= int64(10*time.Second) && a.lastLog.CompareAndSwap(last, now) {
			a.logger.Error("AUDIT LOG WRITE FAILED: calls continue without their audit record", "path", a.path, "error", err, "failures", n)
		}
	}
}

// appendRecord encodes rec as one JSON line, as encoding/json would (same
// field names and order; a tool call's "tool" is written even when empty),
// without reflection.
func appendRecord(b []byte, r *AuditRecord) []byte {
	b = append(b, `{"time":"`...)
	b = r.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","profile":`...)
	b = appendString(b, r.Profile)
	if r.Client != "" {
		b = append(b, `,"client":`...)
		b = appendString(b, r.Client)
	}
	if r.Op == "" {
		b = append(b, `,"tool":`...)
		b = appendString(b, r.Tool)
	} else {
		b = append(b, `,"op":`...)
		b = appendString(b, r.Op)
		if r.Tool != "" {
			b = append(b, `,"tool":`...)
			b = appendString(b, r.Tool)
		}
		if r.Prompt != "" {
			b = append(b, `,"prompt":`...)
			b = appendString(b, r.Prompt)
		}
		if r.URI != "" {
			b = append(b, `,"uri":`...)
			b = appendString(b, r.URI)
		}
	}
	if r.Backend != "" {
		b = append(b, `,"backend":`...)
		b = appendString(b, r.Backend)
	}
	b = append(b, `,"decision":`...)
	b = appendString(b, r.Decision)
	if r.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendString(b, r.Rule)
	}
	b = append(b, `,"outcome":`...)
	b = appendString(b, r.Outcome)
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error)
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendFloat(b, r.LatencyMS, 'f', -1, 64)
	b = append(b, `,"args_hmac":`...)
	b = appendString(b, r.ArgsHMAC)
	if r.KeyID != "" {
		b = append(b, `,"key_id":`...)
		b = appendString(b, r.KeyID)
	}
	b = append(b, `,"args":`...)
	if len(r.Args) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Args...)
	}
	b = append(b, `,"result_bytes":`...)
	b = strconv.AppendInt(b, int64(r.ResultBytes), 10)
	if r.Retries != 0 {
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(r.Retries), 10)
	}
	if r.Fallback != "" {
		b = append(b, `,"fallback":`...)
		b = appendString(b, r.Fallback)
	}
	if r.FallbackFor != "" {
		b = append(b, `,"fallback_for":`...)
		b = appendString(b, r.FallbackFor)
	}
	if r.TraceID != "" {
		b = append(b, `,"trace_id":`...)
		b = appendString(b, r.TraceID)
	}
	if r.CorrelationID != "" {
		b = append(b, `,"correlation_id":`...)
		b = appendString(b, r.CorrelationID)
	}
	if r.Parent != "" {
		b = append(b, `,"parent":`...)
		b = appendString(b, r.Parent)
	}
	return append(b, "}\n"...)
}

// appendString is jsonx.AppendString.
var appendString = jsonx.AppendString

// canonicalArgs returns v (a value decoded from JSON with UseNumber) as
// canonical JSON, object keys sorted at every level and no insignificant
// space, and, for the audit record, args: the same with the values of
// sensitive keys replaced by "[REDACTED]" and configuration secrets inside
// strings scrubbed (see a.sensitive and a.scrub). The first pass writes the
// canonical form and notes whether anything would be redacted; only then (most
// arguments have no sensitive key) is args written in a second pass, else it
// is canonical itself. hint is the expected size in bytes.
func canonicalArgs(v any, a *auditor, hint int) (canonical, args []byte) {
	c := canonWriter{a: a}
	canonical = c.append(make([]byte, 0, hint), v)
	if !c.found {
		return canonical, canonical
	}
	c.redact = true
	return canonical, c.append(make([]byte, 0, len(canonical)), v)
}

// canonWriter writes canonical JSON. With redact false it writes values as
// they are and sets found when a (if not nil) would redact or scrub one; with
// redact true it redacts.
type canonWriter struct {
	a      *auditor
	redact bool
	found  bool
}

// check reports whether the redaction pass is still to be decided.
func (c *canonWriter) check() bool { return c.a != nil && !c.redact && !c.found }

func (c *canonWriter) append(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case json.Number:
		return append(b, v...)
	case float64:
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case string:
		if c.a != nil && c.a.scrub != nil && (c.redact || !c.found) {
			s := c.a.scrub.Replace(v)
			if c.redact {
				v = s
			} else if s != v {
				c.found = true
			}
		}
		return appendString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.append(b, e)
		}
		return append(b, ']')
	case map[string]any:
		var arr [16]string
		keys := arr[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if c.redact && c.a.sensitive(k) {
				b = appendString(b, redacted)
				continue
			}
			if c.check() && c.a.sensitive(k) {
				c.found = true
			}
			b = c.append(b, v[k])
		}
		return append(b, '}')
	default:
		// Not produced by the decoder; encode it as encoding/json does.
		raw, _ := json.Marshal(v)
		return append(b, raw...)
	}
}

// sensitive reports whether the values of key are redacted.
func (a *auditor) sensitive(key string) bool {
	var buf [64]byte
	lk := key
	if len(key) <= len(buf) {
		// Lowercase ASCII without allocating.
		n := copy(buf[:], key)
		for i := range n {
			if c := buf[i]; c >= 'A' && c <= 'Z' {
				buf[i] = c + 'a' - 'A'
			}
		}
		lk = string(buf[:n])
	} else {
		lk = strings.ToLower(key)
	}
	for _, s := range redactKeys {
		if strings.Contains(lk, s) {
			return true
		}
	}
	for _, re := range a.extra {
		if re.MatchString(key) {
			return true
		}
	}
	return false
}

// hashArgs returns the hex HMAC-SHA-256 of canonical JSON under a's key.
func (a *auditor) hashArgs(canonical []byte) string {
	m := a.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(canonical)
	var sum [sha256.Size]byte
	m.Sum(sum[:0])
	a.macs.Put(m)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// AuditFailures returns the number of audit records that could not be
// written to [host] audit_log since New. Each failure is also logged at Error
// level (at most once every 10 seconds); calls are not failed by it.
func (h *Host) AuditFailures() int64 {
	if h.audit == nil {
		return 0
	}
	return h.audit.failures.Load()
}
