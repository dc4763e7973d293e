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
// so callers can tell faults apart with errors.Is.
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

	// ErrNameCollision: two tools map to the same catalogue name. Returned
	// by New; set a backend's prefix to separate them.
	ErrNameCollision = errors.New("tool name collision")

	// ErrClosed: the Host was closed.
	ErrClosed = errors.New("host closed")

	// ErrTimeout is transport.ErrTimeout: the call's deadline ([host]
	// call_timeout or the backend's timeout, or the caller's context)
	// passed. The error also wraps context.DeadlineExceeded.
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

	// ErrUnknownBackend: Host.Restart was given a name that is not a
	// [servers.NAME] or [plugins.NAME].
	ErrUnknownBackend = errors.New("unknown backend")

	// ErrUnhealthy is joined to a backend's last error when it was
	// restarted because health_threshold consecutive health checks failed.
	ErrUnhealthy = errors.New("backend unhealthy")

	// ErrAudit: the audit log ([host] audit_log) cannot be opened for
	// appending. Returned by New: the host fails closed at start-up (a
	// write failure later is logged and counted, see Host.AuditFailures).
	ErrAudit = errors.New("audit log unavailable")
)

// ToolNotAllowedError is the error for a catalogue tool the policy excludes
// from the caller's view.
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
	return fmt.Sprintf("tool %q is not allowed in %s (rule %s); list the allowed tools with Tools (toolhost tools)", e.Name, where, e.Rule)
}

func (e *ToolNotAllowedError) Unwrap() error { return ErrToolNotAllowed }

// UnknownToolError is the error for a name that is not in the catalogue. It
// names close matches so a caller (or a model) can correct itself; it never
// includes arguments or configuration.
type UnknownToolError struct {
	Name    string
	Similar []string // up to 3 catalogue names sharing a part with Name
}

func (e *UnknownToolError) Error() string {
	msg := fmt.Sprintf("unknown tool %q", e.Name)
	if len(e.Similar) > 0 {
		msg += "; did you mean " + strings.Join(e.Similar, ", ") + "?"
	} else {
		msg += "; list the catalogue with Tools (toolhost tools)"
	}
	return msg
}

func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// similar returns up to three names that contain name's tool part or
// share its backend part.
func similar(name string, names []string) []string {
	var out []string
	part := name
	if i := strings.LastIndex(name, "__"); i >= 0 {
		part = name[i+2:]
	}
	part = strings.ToLower(part)
	for _, n := range names {
		ln := strings.ToLower(n)
		if part != "" && (strings.HasSuffix(ln, "__"+part) || ln == part || strings.Contains(ln, part)) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}
