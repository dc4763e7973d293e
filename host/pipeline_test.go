package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/transport"
)

// cannotStart is a Transport whose Connect fails with err; its other
// operations are not reached.
type cannotStart struct {
	transport.Transport
	err error
}

func (c cannotStart) Connect(context.Context) (*mcp.InitializeResult, error) { return nil, c.err }
func (c cannotStart) Close() error                                           { return nil }

// TestPermanentStartFailure: the host tells a start failure that restarting
// cannot cure by transport's sentinel (transport.ErrPermanent, with a
// *transport.PermanentError saying why), whatever the backend's kind: an
// embedder's transport that says so goes straight to failed, with its
// reason, and is not restarted; one that does not is restarted.
func TestPermanentStartFailure(t *testing.T) {
	h := newHost(t, `
[servers.fx]
command = "@FIXTURE@"
`)
	ctx := context.Background()
	sv := func() *host.BackendOptions {
		o := &host.BackendOptions{}
		o.Supervision.RestartBackoff.Min = 1
		o.Supervision.RestartBackoff.Max = 2
		return o
	}
	perm := &transport.PermanentError{Reason: "its licence file is missing", Err: fmt.Errorf("%w: licence.key: no such file", transport.ErrStart)}
	h.Add(ctx, "perm", func() transport.Transport { return cannotStart{err: perm} }, sv())
	st := waitState(t, h, "perm", host.StateFailed)
	if !errors.Is(st.Err, transport.ErrPermanent) || !errors.Is(st.Err, transport.ErrStart) || st.Restarts != 0 ||
		!strings.HasSuffix(st.LastError, "not restarted: its licence file is missing; Host.Restart starts it again") {
		t.Errorf("perm: %s, %d restarts, error %q (%v); want failed at once with its reason", st.State, st.Restarts, st.LastError, st.Err)
	}
	// Subscribed before the Add: its first restart can come before Add
	// returns.
	events := make(chan host.Event, 64)
	unsubscribe := h.Subscribe(func(ev host.Event) {
		if ev.Backend == "flaky" && ev.State == host.StateRestarting {
			select {
			case events <- ev:
			default:
			}
		}
	})
	defer unsubscribe()
	h.Add(ctx, "flaky", func() transport.Transport { return cannotStart{err: transport.ErrStart} }, sv())
	select {
	case <-events:
	case <-time.After(time.Minute):
		t.Fatalf("flaky never restarted: %+v", statusOf(h, "flaky"))
	}
	if st := statusOf(h, "flaky"); st.State == host.StateFailed && st.Restarts == 0 {
		t.Errorf("flaky: failed without a restart: %s", st.LastError)
	}
}
