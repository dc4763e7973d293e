package host

import (
	"sync"
	"time"

	"github.com/toolhost/toolhost/transport"
)

// EventKind tells what an Event reports.
type EventKind string

// Kinds of Event.
const (
	// EventState: a backend entered a new State (Event.State); Err is the
	// reason for starting again, restarting and failed, and for closed and
	// disabled by Host.Apply, Remove or Disable (ErrBackendRemoved,
	// ErrBackendDisabled).
	EventState EventKind = "state"
	// EventHealth: a health check of a ready backend failed (Err), or the
	// first check after failures passed again (Err nil).
	EventHealth EventKind = "health"
	// EventCatalogue: the catalogue changed: Added and Removed list the
	// catalogue names (a backend started, was given up, or announced
	// notifications/tools/list_changed; Host.Apply, Add, Remove, Enable
	// or Disable changed the backends). After an Apply that changed
	// [policy], [profiles] or [tools] one is emitted even when both lists
	// are empty: what a view offers may have changed.
	EventCatalogue EventKind = "catalogue"
	// EventListChanged: a backend announced that its resources or prompts
	// changed (List); Host.Resources and Host.Prompts list them afresh.
	EventListChanged EventKind = "list_changed"
	// EventCircuit: a circuit breaker changed state (Circuit): the
	// backend's, or with Tool set, one tool's.
	EventCircuit EventKind = "circuit"
)

// Event is one change of the host's catalogue or of a backend's state, as
// delivered to Options.Events and Host.Subscribe callbacks.
type Event struct {
	Time    time.Time
	Kind    EventKind
	Backend string
	// Tool is the catalogue name of the tool of an EventCircuit of a tool
	// breaker; empty for the backend's breaker.
	Tool string
	// State is the backend's new state (EventState).
	State State
	// Circuit is the breaker's new state (EventCircuit): "closed", "open"
	// or "half-open".
	Circuit string
	// Added and Removed are catalogue names (EventCatalogue), sorted.
	Added, Removed []string
	// List is the list a backend announced changed (EventListChanged).
	List transport.ListKind
	// Err explains the change where there is a reason (a failed start, a
	// lost connection, a failed health check).
	Err error
}

// subscriber delivers events to one callback, in order, on a goroutine of
// its own, so a slow callback never blocks the host (its queue grows
// instead).
type subscriber struct {
	fn     func(Event)
	mu     sync.Mutex
	queue  []Event
	signal chan struct{} // buffered 1: the queue is not empty
	stop   chan struct{}
	done   chan struct{}
}

func (s *subscriber) run() {
	defer close(s.done)
	for {
		select {
		case <-s.signal:
		case <-s.stop:
			return
		}
		for {
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.mu.Unlock()
				break
			}
			ev := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			s.fn(ev)
		}
	}
}

// Subscribe calls fn with every Event from now on, in the order the host
// emitted them, on a goroutine of its own (fn may block: events queue up
// for it). It returns a function that stops delivery and waits for a call
// of fn in progress to return; it is safe to call more than once, and
// after Close (then it does nothing). Close stops every subscription.
func (h *Host) Subscribe(fn func(Event)) (unsubscribe func()) {
	s := &subscriber{fn: fn, signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	h.subMu.Lock()
	if h.subClosed {
		h.subMu.Unlock()
		return func() {}
	}
	h.subs = append(h.subs, s)
	h.subMu.Unlock()
	go s.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.subMu.Lock()
			found := false
			for i, x := range h.subs {
				if x == s {
					h.subs = append(h.subs[:i:i], h.subs[i+1:]...)
					found = true
					break
				}
			}
			h.subMu.Unlock()
			if !found {
				return // Close has stopped it already
			}
			close(s.stop)
			<-s.done
		})
	}
}

// emit queues ev for every subscriber.
func (h *Host) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.subMu.Lock()
	defer h.subMu.Unlock()
	for _, s := range h.subs {
		s.mu.Lock()
		s.queue = append(s.queue, ev)
		s.mu.Unlock()
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}
}

// closeSubscribers delivers what is queued and stops every subscriber.
func (h *Host) closeSubscribers() {
	h.subMu.Lock()
	subs := h.subs
	h.subs, h.subClosed = nil, true
	h.subMu.Unlock()
	for _, s := range subs {
		// Drain: run delivers the queue before it sees stop only if
		// signalled first, so deliver the rest here.
		close(s.stop)
		<-s.done
		s.mu.Lock()
		rest := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, ev := range rest {
			s.fn(ev)
		}
	}
}
