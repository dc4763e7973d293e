package host

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/transport"
)

// Errors returned by Host methods. Every error wraps at most one of these
// (plus, where a backend failed, the transport sentinel that explains how),
// so callers can tell faults apart with errors.Is. A tool call's error text
// begins with the tool's catalogue name ("fs__read_file: ..."), once,
// unless the error names the tool itself (*UnknownToolError,
// *ToolNotAllowedError), refuses a call on a closed Host (ErrClosed) or in
// a removed profile (ErrUnknownProfile) before it began, or is its
// fallback's (which begins with the fallback's name); a prompt's or resource's failure at its
// backend begins "prompt NAME: " or "resource URI of BACKEND: ".
var (
	// ErrUnknownTool: no tool of that name is in the catalogue. The error is
	// an *UnknownToolError.
	ErrUnknownTool = errors.New("unknown tool")

	// ErrBackendUnavailable: the tool's backend is not connected (it failed
	// to start, or its connection was lost). The error also wraps the
	// backend's last error; Status shows it too.
	ErrBackendUnavailable = errors.New("backend unavailable")

	// ErrInvalidArguments: the arguments are not a JSON object (MCP
	// 2025-11-25, server/tools: "arguments" is an object).
	ErrInvalidArguments = errors.New("invalid tool arguments")

	// ErrNameCollision: two tools map to the same catalogue name. It never
	// fails New or a rebuild: the tool that does not hold the name is left
	// out, and the Reason of its Host.Excluded entry is an error wrapping
	// this one that names both sources; set a backend's prefix to separate
	// them. (Two backends with the same prefix are refused by config.Load.)
	ErrNameCollision = errors.New("tool name collision")

	// ErrClosed: the Host was closed.
	ErrClosed = errors.New("host closed")

	// ErrTimeout is transport.ErrTimeout: the call's one deadline (the
	// backend's timeout, else [host] call_timeout, from the call's start,
	// waiting for the backend included; or the caller's context's earlier
	// deadline) passed. The error also wraps context.DeadlineExceeded and
	// says which deadline passed (a *DeadlineError when it passed while the
	// host waited for the backend).
	ErrTimeout = transport.ErrTimeout

	// ErrConnectionLost is transport.ErrConnectionLost: the backend died or
	// went away during the call.
	ErrConnectionLost = transport.ErrConnectionLost

	// ErrToolNotAllowed: the tool is in the catalogue but the policy (the
	// global [policy], or the profile of the View) excludes it. The backend
	// was not called. The error is a *ToolNotAllowedError naming the rule.
	ErrToolNotAllowed = errors.New("tool not allowed")

	// ErrPromptNotAllowed and ErrResourceNotAllowed: the prompt or the
	// resource exists but the policy (the [policy] keys prompts,
	// deny_prompts, resources, deny_resources and default, or the profile
	// of the View) excludes it. The backend was not asked. The error is a
	// *NotAllowedError naming the rule.
	ErrPromptNotAllowed   = errors.New("prompt not allowed")
	ErrResourceNotAllowed = errors.New("resource not allowed")

	// ErrRequiredBackend: a backend the View's profile requires is not
	// ready (it failed to start or was lost); no call of the profile is
	// made until it is. The error names the backend and wraps its error.
	ErrRequiredBackend = errors.New("required backend unavailable")

	// ErrUnknownProfile: Host.Profile was given a name that is not a
	// [profiles.NAME] table.
	ErrUnknownProfile = errors.New("unknown profile")

	// ErrInvalidOutput: the tool declares an outputSchema and the
	// backend's structuredContent does not match it (MCP 2025-11-25,
	// server/tools, "Output Schema": servers MUST conform, clients SHOULD
	// validate). The result is dropped.
	ErrInvalidOutput = errors.New("tool result does not match its outputSchema")

	// ErrOutputTooLarge is transport.ErrOutputTooLarge: the result's JSON
	// encoding exceeds the backend's max_output. The result is dropped,
	// never truncated; the backend stays usable.
	ErrOutputTooLarge = transport.ErrOutputTooLarge

	// ErrCircuitOpen: the circuit breaker of the tool's backend, or of the
	// tool itself, is open after consecutive failures (circuit_breaker,
	// default 5 failures, 60s cooldown): the call failed fast without
	// reaching the backend. The error is a *CircuitOpenError saying when a
	// trial call is let through again.
	ErrCircuitOpen = errors.New("circuit open")

	// ErrUnknownBackend: Host.Restart (CheckHealth, Enable, Disable,
	// Remove) was given a name that is not a [servers.NAME] or
	// [plugins.NAME], nor a backend added with Host.Add.
	ErrUnknownBackend = errors.New("unknown backend")

	// ErrUnhealthy is joined to a backend's last error when it was
	// restarted because health_threshold consecutive health checks failed.
	ErrUnhealthy = errors.New("backend unhealthy")

	// ErrAudit: the audit log ([host] audit_log) cannot be opened for
	// appending, or the key of its arguments' hashes cannot be used
	// (Options.AuditKey, Options.AuditKeyFile). Returned by New: the host fails closed at start-up (a
	// write failure later is logged and counted, see Host.AuditFailures).
	ErrAudit = errors.New("audit log unavailable")
)

// ToolNotAllowedError is the error for a catalogue tool the policy excludes
// from the caller's view. Its text says what happened and what to do in words
// that fit any caller (a program, a person or a language model): it names no
// command or method.
type ToolNotAllowedError struct {
	Name    string
	Profile string // "" for the Host's own view
	Rule    string // the rule that decided, as in Decision.Rule
}

func (e *ToolNotAllowedError) Error() string {
	where := "the policy"
	if e.Profile != "" {
		where = fmt.Sprintf("profile %q", e.Profile)
	}
	return fmt.Sprintf("tool %q is not allowed in %s (rule %s); calling it again will fail the same way: use one of the tools in the list of available tools", e.Name, where, e.Rule)
}

func (e *ToolNotAllowedError) Unwrap() error { return ErrToolNotAllowed }

// UnknownToolError is the error for a name that is not in the catalogue. It
// names close matches so a caller (or a model) can correct itself; it never
// includes arguments or configuration. Its text names no command or method,
// so it fits any caller.
type UnknownToolError struct {
	Name    string
	Similar []string // up to 3 catalogue names close to Name, closest first
}

func (e *UnknownToolError) Error() string {
	msg := fmt.Sprintf("unknown tool %q", e.Name)
	if len(e.Similar) > 0 {
		msg += "; did you mean " + strings.Join(e.Similar, ", ") + "? Call a tool by its exact name"
	} else {
		msg += "; no available tool has a similar name: use a name from the list of available tools, exactly as listed"
	}
	return msg
}

func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// maxSimilar is the most names an UnknownToolError suggests.
const maxSimilar = 3

// similar returns up to maxSimilar names of names close to name, closest
// first (ties by name). Close means, comparing without case and with '-' and
// '_' alike (runs of them count as one):
//   - the same name (textkit__word-count for textkit__word_count,
//     textkit_sha256 for textkit__sha256);
//   - the same backend part and a tool part at a small edit distance
//     (textkit__sha2566 for textkit__sha256, fial for fail): at most 1 for tool parts of
//     up to 4 characters, 2 up to 10, else 3; for a name without "__", the
//     whole name at that distance (textkit_sha2566);
//   - the tool part alone, or a backend part at that distance
//     (sha256 or textkt__sha256 for textkit__sha256);
//   - a tool part of at least 3 characters contained in the tool's.
func similar(name string, names []string) []string {
	qb, qt := splitName(name)
	qn := normName(name)
	type match struct {
		name  string
		score int
	}
	var ms []match
	for _, n := range names {
		cb, ct := splitName(n)
		limit := editLimit(ct)
		score := -1
		switch {
		case qn == normName(n):
			score = 0
		case qb == cb:
			if d := editDistance(qt, ct, limit); d <= limit {
				score = d
			}
		case qb == "" && qt == ct:
			score = 1
		case qb == "":
			// No "__" in name: compare it whole (textkit_sha2566).
			if d := editDistance(qn, normName(n), limit); d <= limit {
				score = d
			}
		case qt == ct:
			if d := editDistance(qb, cb, editLimit(cb)); d <= editLimit(cb) {
				score = d
			}
		}
		if score < 0 && len(qt) >= 3 && strings.Contains(ct, qt) {
			score = limit + 1
		}
		if score >= 0 {
			ms = append(ms, match{n, score})
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].score != ms[j].score {
			return ms[i].score < ms[j].score
		}
		return ms[i].name < ms[j].name
	})
	var out []string
	for i := 0; i < len(ms) && i < maxSimilar; i++ {
		out = append(out, ms[i].name)
	}
	return out
}

// splitName splits a catalogue name at its first "__" (backend names never
// contain one) and normalises both parts: lower case, '-' as '_', a run of
// '_' as one. A name without "__" is all tool part.
func splitName(name string) (backend, tool string) {
	b, t, ok := strings.Cut(name, "__")
	if !ok {
		b, t = "", name
	}
	return normName(b), normName(t)
}

func normName(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	prevSep := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' || c == '_' {
			if !prevSep {
				sb.WriteByte('_')
			}
			prevSep = true
			continue
		}
		prevSep = false
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// editLimit is the largest edit distance at which a tool part of s's
// length still counts as a typo of s.
func editLimit(s string) int {
	switch {
	case len(s) <= 4:
		return 1
	case len(s) <= 10:
		return 2
	}
	return 3
}

// editDistance is the edit distance between a and b (bytes) counting an
// insertion, a deletion, a substitution or a swap of two adjacent bytes as
// one edit (optimal string alignment), or limit+1 when it is larger than
// limit. Catalogue names are at most 64 bytes; a longer a returns at once.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	pprev := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		pprev, prev, cur = prev, cur, pprev
	}
	if prev[len(b)] > limit {
		return limit + 1
	}
	return prev[len(b)]
}
