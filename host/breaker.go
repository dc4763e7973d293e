package host

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/transport"
)

// Circuit states, as in BackendStatus.Circuit and Event.Circuit.
const (
	CircuitClosed   = "closed"
	CircuitOpen     = "open"
	CircuitHalfOpen = "half-open"
)

// breaker is one circuit breaker (github.com/sony/gobreaker): closed → open
// after Failures consecutive failures, half-open after Cooldown, closed
// after Successes consecutive successes (a failure while half-open opens
// it again). It remembers when it opened, for ErrCircuitOpen's message.
//
// With a store (breaker_store.go), each state change is written through to
// it under key, and an open read from the store (another replica's, or this
// host's before a restart) is in remote: while it lasts the breaker fails
// fast as if open.
type breaker struct {
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	cooldown time.Duration
	failures int
	openAt   atomic.Int64 // UnixNano of the last transition to open
	remote   *remoteSlot  // nil without a store
}

// newBreaker makes a breaker; share (nil without a store) keeps its state
// under key.
func newBreaker(name string, c config.Circuit, share *breakerShare, key string, onChange func(from, to string)) *breaker {
	br := &breaker{cooldown: c.Cooldown.Std(), failures: c.Failures, remote: share.slot(key)}
	if br.remote != nil {
		br.remote.br.Store(br)
	}
	br.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name: name,
		// Successes calls are let through while half-open; all must
		// succeed to close it.
		MaxRequests: uint32(c.Successes),
		Timeout:     br.cooldown,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(c.Failures) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				br.openAt.Store(time.Now().UnixNano())
			}
			share.save(key, circuitName(to), c.Failures, br.cooldown)
			if onChange != nil {
				onChange(circuitName(from), circuitName(to))
			}
		},
	})
	return br
}

func circuitName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return CircuitOpen
	case gobreaker.StateHalfOpen:
		return CircuitHalfOpen
	}
	return CircuitClosed
}

// state returns the breaker's state ("closed", "open", "half-open"): open
// while an open read from the store lasts.
func (br *breaker) state() string {
	if br.remote.live() != nil {
		return CircuitOpen
	}
	return circuitName(br.cb.State())
}

// from says where the breaker's open state came from: "" (this process,
// or not open) or "store: ORIGIN" (opened by ORIGIN, another replica or
// this host before a restart, as REPLICA#INSTANCE).
func (br *breaker) from() string {
	if r := br.remote.live(); r != nil {
		return "store: " + r.origin
	}
	return ""
}

// allow asks to make one call. On success it returns done, which must be
// called with the call's outcome (see countsAsFailure); otherwise a
// *CircuitOpenError.
func (br *breaker) allow(backend, tool string) (func(failed bool), error) {
	if r := br.remote.live(); r != nil {
		return nil, &CircuitOpenError{Backend: backend, Tool: tool, Failures: r.failures, RetryAt: r.until, OpenedBy: r.origin}
	}
	done, err := br.cb.Allow()
	if err != nil {
		until := time.Now()
		if errors.Is(err, gobreaker.ErrOpenState) {
			until = time.Unix(0, br.openAt.Load()).Add(br.cooldown)
		}
		return nil, &CircuitOpenError{Backend: backend, Tool: tool, Failures: br.failures, RetryAt: until, HalfOpen: errors.Is(err, gobreaker.ErrTooManyRequests)}
	}
	return func(failed bool) {
		if failed {
			done(errFailed)
		} else {
			done(nil)
		}
	}, nil
}

var errFailed = errors.New("failed")

// countsAsFailure reports whether err from a call means the backend (or
// the tool) is failing: it could not be reached, lost the connection, broke
// the protocol, timed out or trapped. A tool error result, refused
// arguments, a result over max_output, a call that timed out while queued
// for a plugin instance (transport.ErrBusy) and the caller's own cancellation
// are not failures of the backend.
func countsAsFailure(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, transport.ErrOutputTooLarge),
		errors.Is(err, ErrInvalidOutput),
		errors.Is(err, ErrCircuitOpen),
		errors.Is(err, transport.ErrBusy),
		errors.Is(err, ErrClosed):
		return false
	}
	return true
}

// CircuitOpenError is the error for a call refused because a circuit
// breaker is open (or half-open with its trial calls already in flight).
type CircuitOpenError struct {
	Backend string
	// Tool is the catalogue name when the tool's own breaker is open; empty
	// when the backend's is.
	Tool string
	// Failures is the number of consecutive failures that opened it.
	Failures int
	// RetryAt is when the breaker lets a trial call through again.
	RetryAt time.Time
	// HalfOpen is set when the breaker is half-open and its trial calls
	// are taken.
	HalfOpen bool
	// OpenedBy names the process that opened the circuit when it was not
	// this one (read from the store: another replica, or this host before
	// a restart), as REPLICA#INSTANCE; empty when it opened here.
	OpenedBy string
}

func (e *CircuitOpenError) Error() string {
	what := fmt.Sprintf("backend %q", e.Backend)
	if e.Tool != "" {
		what = fmt.Sprintf("tool %q", e.Tool)
	}
	if e.HalfOpen {
		return fmt.Sprintf("circuit open for %s: half-open, its trial calls are in flight; retry shortly", what)
	}
	in := time.Until(e.RetryAt).Round(time.Second)
	if in < 0 {
		in = 0
	}
	by := ""
	if e.OpenedBy != "" {
		by = " (opened by " + e.OpenedBy + ")"
	}
	return fmt.Sprintf("circuit open for %s after %d consecutive failures%s: calls fail fast until %s (in %v), when a trial call is let through",
		what, e.Failures, by, e.RetryAt.Format(time.TimeOnly), in)
}

func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }
