package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/procgroup"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/transport"
)

// parseFixtureConfig parses toml with @FIXTURE@ replaced by the fixture
// server's path.
func parseFixtureConfig(t *testing.T, toml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(toml, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// eventLog records a Host's events and lets a test wait for one.
type eventLog struct {
	mu     sync.Mutex
	events []host.Event
	wake   chan struct{}
}

func newEventLog() *eventLog { return &eventLog{wake: make(chan struct{})} }

func (l *eventLog) add(ev host.Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// await waits (up to a minute, a bound for a hung test, not a timing
// assertion) for an event that match accepts.
func (l *eventLog) await(t *testing.T, what string, match func(host.Event) bool) host.Event {
	t.Helper()
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	for seen := 0; ; {
		l.mu.Lock()
		evs, wake := l.events, l.wake
		l.mu.Unlock()
		for ; seen < len(evs); seen++ {
			if match(evs[seen]) {
				return evs[seen]
			}
		}
		select {
		case <-wake:
		case <-limit.C:
			t.Fatalf("no event: %s; got %+v", what, evs)
		}
	}
}

func catalogue(t *testing.T, h *host.Host) []string {
	t.Helper()
	return toolNames(h.Tools(context.Background()))
}

// gone asserts that process group pid has no live process left. Closing a
// stdio transport waits until its process group is gone, so this holds as
// soon as Apply, Disable or Remove returns: no waiting.
func gone(t *testing.T, what string, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatalf("%s: no pid", what)
	}
	if left := procgroup.Members(pid); len(left) > 0 {
		t.Errorf("%s: process group %d still has %v", what, pid, left)
	}
}

const applyBefore = `
[servers.keep]
command = "@FIXTURE@"

[servers.drop]
command = "@FIXTURE@"

[servers.change]
command = "@FIXTURE@"
`

const applyAfter = `
[servers.keep]
command = "@FIXTURE@"

[servers.change]
command = "@FIXTURE@"
args = ["-extra"]

[servers.fresh]
command = "@FIXTURE@"

[policy]
deny = ["keep__fail"]
`

// TestApply: Apply adds, removes, changes and keeps backends: the kept one
// is the same process with no restart, the removed and the replaced ones'
// processes are gone when Apply returns, the added and changed ones are
// ready, the new policy decides calls, catalogue events tell each change,
// and an invalid configuration changes nothing.
func TestApply(t *testing.T) {
	h := newHost(t, applyBefore)
	events := newEventLog()
	defer h.Subscribe(events.add)()
	ctx := context.Background()
	before := map[string]host.BackendStatus{}
	for _, st := range h.Status() {
		if st.State != host.StateReady || st.Pid == 0 {
			t.Fatalf("%s: %s (%s), want ready with a pid", st.Name, st.State, st.LastError)
		}
		before[st.Name] = st
	}

	// An invalid configuration changes nothing.
	bad := &config.Config{Dir: t.TempDir(), Servers: map[string]*config.Server{
		"keep": {Command: testutil.Fixture(t)}, "broken": {}}}
	if _, err := h.Apply(ctx, bad); err == nil {
		t.Fatal("Apply of a configuration with a server with neither command nor url: nil error")
	} else if el := (config.ErrorList)(nil); !errors.As(err, &el) {
		t.Fatalf("Apply of an invalid configuration: %v, want a config.ErrorList", err)
	}
	for _, st := range h.Status() {
		if b := before[st.Name]; st.Pid != b.Pid || st.State != host.StateReady || st.Restarts != 0 {
			t.Fatalf("after an invalid Apply, %s is %s pid %d restarts %d; want it untouched (pid %d)", st.Name, st.State, st.Pid, st.Restarts, b.Pid)
		}
	}

	rep, err := h.Apply(ctx, parseFixtureConfig(t, applyAfter))
	if err != nil {
		t.Fatal(err)
	}
	want := host.ApplyReport{Added: []string{"fresh"}, Removed: []string{"drop"}, Changed: []string{"change"}, Unchanged: []string{"keep"}, Policy: true}
	if !slices.Equal(rep.Added, want.Added) || !slices.Equal(rep.Removed, want.Removed) || !slices.Equal(rep.Changed, want.Changed) ||
		!slices.Equal(rep.Unchanged, want.Unchanged) || rep.Policy != want.Policy || len(rep.Disabled) != 0 {
		t.Fatalf("report %+v, want %+v", rep, want)
	}

	// Processes: the removed and the replaced ones are gone now.
	gone(t, "removed backend drop", before["drop"].Pid)
	gone(t, "changed backend's old process", before["change"].Pid)
	after := map[string]host.BackendStatus{}
	for _, st := range h.Status() {
		after[st.Name] = st
	}
	if _, ok := after["drop"]; ok {
		t.Errorf("drop still in Status: %+v", after["drop"])
	}
	if k := after["keep"]; k.Pid != before["keep"].Pid || k.Restarts != 0 || k.State != host.StateReady || !k.StartedAt.Equal(before["keep"].StartedAt) {
		t.Errorf("keep: %+v; want the same process (pid %d), never restarted", k, before["keep"].Pid)
	}
	for _, name := range []string{"change", "fresh"} {
		if st := after[name]; st.State != host.StateReady || st.Pid == 0 || st.Pid == before["change"].Pid {
			t.Errorf("%s: %s pid %d (%s), want ready in a new process", name, st.State, st.Pid, st.LastError)
		}
	}

	// The catalogue and the policy.
	names := catalogue(t, h)
	for _, n := range []string{"keep__echo", "change__nested", "fresh__echo"} {
		if !slices.Contains(names, n) {
			t.Errorf("%s not in the catalogue %v", n, names)
		}
	}
	for _, n := range []string{"drop__echo", "keep__fail"} {
		if slices.Contains(names, n) {
			t.Errorf("%s still in the catalogue", n)
		}
	}
	if _, err := h.CallTool(ctx, "keep__fail", nil); !errors.Is(err, host.ErrToolNotAllowed) {
		t.Errorf("keep__fail after the policy denies it: %v, want ErrToolNotAllowed", err)
	}
	if _, err := h.CallTool(ctx, "drop__echo", map[string]any{"text": "x"}); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("a removed backend's tool: %v, want ErrUnknownTool", err)
	}
	for _, n := range []string{"keep__echo", "change__nested", "fresh__echo"} {
		args := map[string]any{"text": "hi"}
		if n == "change__nested" {
			args = map[string]any{"user": map[string]any{"name": "ann", "age": 7}}
		}
		if res, err := h.CallTool(ctx, n, args); err != nil || res.IsError {
			t.Errorf("%s: %v %v", n, err, res)
		}
	}

	// The events.
	events.await(t, "drop closed", func(ev host.Event) bool {
		return ev.Kind == host.EventState && ev.Backend == "drop" && ev.State == host.StateClosed && errors.Is(ev.Err, host.ErrBackendRemoved)
	})
	events.await(t, "drop's tools removed", func(ev host.Event) bool {
		return ev.Kind == host.EventCatalogue && slices.Contains(ev.Removed, "drop__echo")
	})
	events.await(t, "fresh's tools added", func(ev host.Event) bool {
		return ev.Kind == host.EventCatalogue && slices.Contains(ev.Added, "fresh__echo")
	})
	events.await(t, "change's new tools added", func(ev host.Event) bool {
		return ev.Kind == host.EventCatalogue && slices.Contains(ev.Added, "change__nested")
	})

	// The same configuration again changes nothing.
	rep, err = h.Apply(ctx, parseFixtureConfig(t, applyAfter))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added)+len(rep.Removed)+len(rep.Changed) != 0 || rep.Policy || len(rep.Unchanged) != 3 {
		t.Errorf("applying the same configuration again: %+v, want 3 unchanged and nothing else", rep)
	}
}

// TestApplyLeaksNothing: a backend added by Apply and removed by the next
// Apply leaves no goroutine and no process behind, while the Host runs on.
func TestApplyLeaksNothing(t *testing.T) {
	const base = `
[servers.keep]
command = "@FIXTURE@"
health_check = "none"
`
	h := newHost(t, base)
	ctx := context.Background()
	ignore := goleak.IgnoreCurrent()
	for i := range 2 {
		if _, err := h.Apply(ctx, parseFixtureConfig(t, base+`
[servers.extra]
command = "@FIXTURE@"
health_check = "none"
`)); err != nil {
			t.Fatal(err)
		}
		st := statusOf(h, "extra")
		if st.State != host.StateReady {
			t.Fatalf("round %d: extra %s (%s)", i, st.State, st.LastError)
		}
		if res, err := h.CallTool(ctx, "extra__echo", map[string]any{"text": "x"}); err != nil || res.IsError {
			t.Fatalf("round %d: extra__echo: %v %v", i, err, res)
		}
		rep, err := h.Apply(ctx, parseFixtureConfig(t, base))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Removed, []string{"extra"}) || !slices.Equal(rep.Unchanged, []string{"keep"}) {
			t.Fatalf("round %d: %+v", i, rep)
		}
		gone(t, "extra", st.Pid)
	}
	if err := goleak.Find(ignore); err != nil {
		t.Errorf("after adding and removing a backend: %v", err)
	}
}

// TestDisableEnable: a disabled backend's process is gone and its tools
// leave the catalogue, calls fail with ErrBackendDisabled, Status shows it
// disabled, Apply keeps it disabled, and Enable starts it again.
func TestDisableEnable(t *testing.T) {
	const toml = `
[servers.a]
command = "@FIXTURE@"

[servers.b]
command = "@FIXTURE@"
`
	h := newHost(t, toml)
	events := newEventLog()
	defer h.Subscribe(events.add)()
	ctx := context.Background()
	pid := statusOf(h, "a").Pid
	if err := h.Disable(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	gone(t, "disabled backend a", pid)
	if st := statusOf(h, "a"); st.State != host.StateDisabled || !errors.Is(st.Err, host.ErrBackendDisabled) {
		t.Fatalf("a: %s (%v), want disabled", st.State, st.Err)
	}
	if names := catalogue(t, h); slices.Contains(names, "a__echo") || !slices.Contains(names, "b__echo") {
		t.Fatalf("catalogue with a disabled: %v", names)
	}
	events.await(t, "a's tools removed", func(ev host.Event) bool {
		return ev.Kind == host.EventCatalogue && slices.Contains(ev.Removed, "a__echo")
	})
	events.await(t, "a disabled", func(ev host.Event) bool {
		return ev.Kind == host.EventState && ev.Backend == "a" && ev.State == host.StateDisabled
	})
	_, err := h.CallTool(ctx, "a__echo", map[string]any{"text": "x"})
	if !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, host.ErrBackendDisabled) {
		t.Fatalf("calling a disabled backend's tool: %v, want ErrBackendUnavailable and ErrBackendDisabled", err)
	}
	if err := h.Restart(ctx, "a"); !errors.Is(err, host.ErrBackendDisabled) {
		t.Errorf("Restart of a disabled backend: %v, want ErrBackendDisabled", err)
	}
	if err := h.Disable(ctx, "a"); err != nil {
		t.Errorf("second Disable: %v", err)
	}
	if err := h.Disable(ctx, "nope"); !errors.Is(err, host.ErrUnknownBackend) {
		t.Errorf("Disable of an unknown backend: %v", err)
	}

	// Apply keeps it disabled, with its new configuration.
	rep, err := h.Apply(ctx, parseFixtureConfig(t, strings.Replace(toml, "[servers.b]", "[servers.a.env]\nX = \"1\"\n\n[servers.b]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Changed, []string{"a"}) || !slices.Equal(rep.Disabled, []string{"a"}) {
		t.Fatalf("Apply with a disabled and changed: %+v", rep)
	}
	if st := statusOf(h, "a"); st.State != host.StateDisabled || st.Pid != 0 {
		t.Fatalf("a after Apply: %s pid %d, want disabled with no process", st.State, st.Pid)
	}

	if err := h.Enable(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	st := statusOf(h, "a")
	if st.State != host.StateReady || st.Pid == 0 || st.Pid == pid {
		t.Fatalf("a after Enable: %s pid %d (%s)", st.State, st.Pid, st.LastError)
	}
	if res, err := h.CallTool(ctx, "a__echo", map[string]any{"text": "back"}); err != nil || res.IsError {
		t.Fatalf("a__echo after Enable: %v %v", err, res)
	}
	if err := h.Enable(ctx, "a"); err != nil {
		t.Errorf("second Enable: %v", err)
	}
}

// TestAddRemoveCustomTransport: a backend of the embedder's own transport
// is listed, policed and called like a configured one, and Remove takes it
// out; a configuration that names it is refused.
func TestAddRemoveCustomTransport(t *testing.T) {
	h := newHost(t, `
[servers.fx]
command = "@FIXTURE@"

[policy]
deny = ["go__wait"]
`)
	ctx := context.Background()
	var mu sync.Mutex
	var trs []*goTools
	newTr := func() transport.Transport {
		mu.Lock()
		defer mu.Unlock()
		g := newGoTools(demoTools())
		trs = append(trs, g)
		return g
	}
	if err := h.Add(ctx, "go", newTr, &host.BackendOptions{Prefix: ptr("go__")}); err != nil {
		t.Fatal(err)
	}
	if err := h.Add(ctx, "go", newTr, nil); !errors.Is(err, host.ErrBackendExists) {
		t.Errorf("a second Add of the same name: %v, want ErrBackendExists", err)
	}
	if err := h.Add(ctx, "fx", newTr, nil); !errors.Is(err, host.ErrBackendExists) {
		t.Errorf("Add of a configured backend's name: %v, want ErrBackendExists", err)
	}
	if st := statusOf(h, "go"); st.State != host.StateReady || st.Kind != host.KindCustom || st.Server != "gotools 1.0.0" {
		t.Fatalf("go: %+v", st)
	}
	res, err := h.CallTool(ctx, "go__echo", map[string]any{"text": "from Go"})
	if err != nil || resultString(res) != "from Go" {
		t.Fatalf("go__echo: %v %v", err, res)
	}
	if _, err := h.CallTool(ctx, "go__wait", nil); !errors.Is(err, host.ErrToolNotAllowed) {
		t.Errorf("go__wait, denied by the policy: %v", err)
	}

	// Apply keeps it, and refuses a configuration that names it.
	rep, err := h.Apply(ctx, parseFixtureConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Policy || !slices.Equal(rep.Unchanged, []string{"fx"}) {
		t.Errorf("Apply: %+v", rep)
	}
	if st := statusOf(h, "go"); st.State != host.StateReady || st.Restarts != 0 {
		t.Errorf("go after Apply: %+v", st)
	}
	if _, err := h.Apply(ctx, parseFixtureConfig(t, "[servers.go]\ncommand = \"@FIXTURE@\"\n")); !errors.Is(err, host.ErrBackendExists) {
		t.Errorf("Apply naming an added backend: %v, want ErrBackendExists", err)
	}

	// Disable and Enable build a new transport.
	if err := h.Disable(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if err := h.Enable(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if err := h.Remove(ctx, "fx"); !errors.Is(err, host.ErrUnknownBackend) {
		t.Errorf("Remove of a configured backend: %v, want ErrUnknownBackend", err)
	}
	if err := h.Remove(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if names := catalogue(t, h); slices.Contains(names, "go__echo") {
		t.Errorf("go__echo after Remove: %v", names)
	}
	if _, err := h.CallTool(ctx, "go__echo", nil); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("go__echo after Remove: %v, want ErrUnknownTool", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(trs) != 2 {
		t.Errorf("%d transports made, want 2 (Add, Enable)", len(trs))
	}
	for i, g := range trs {
		if g.usable() != transport.ErrClosed {
			t.Errorf("transport %d not closed", i)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestApplyWhileCalling: calls to a kept backend go on while Apply removes
// and changes others (run with -race).
func TestApplyWhileCalling(t *testing.T) {
	h := newHost(t, applyBefore)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := h.CallTool(ctx, "keep__echo", map[string]any{"text": "x"})
				if ctx.Err() == nil && (err != nil || res.IsError) {
					select {
					case errs <- errors.Join(err, errors.New(resultString(res))):
					default:
					}
					return
				}
				h.Status()
			}
		}()
	}
	for _, toml := range []string{applyAfter, applyBefore, applyAfter} {
		if _, err := h.Apply(context.Background(), parseFixtureConfig(t, toml)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("a call to the kept backend failed during Apply: %v", err)
	}
}

// TestApplyPlugins: Apply adds a plugin to a Host that had none (its Wasm
// engine is made then), restarts it when its table changes and removes it,
// leaving no goroutine behind.
func TestApplyPlugins(t *testing.T) {
	echo := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./echo")
	base := "[host]\ncache_dir = \"" + t.TempDir() + "\"\n\n[servers.fx]\ncommand = \"@FIXTURE@\"\nhealth_check = \"none\"\n"
	h := newHost(t, base)
	ignore := goleak.IgnoreCurrent()
	ctx := context.Background()
	for i, c := range []struct {
		extra string
		check func(host.ApplyReport) bool
	}{
		// startup_timeout: a cold compile into this test's own cache under
		// -race on a busy machine can outlast the 30s default.
		{"[plugins.echo]\npath = \"" + echo + "\"\nstartup_timeout = \"10m\"\n", func(r host.ApplyReport) bool { return slices.Equal(r.Added, []string{"echo"}) }},
		{"[plugins.echo]\npath = \"" + echo + "\"\nstartup_timeout = \"10m\"\ninstances = 2\n", func(r host.ApplyReport) bool { return slices.Equal(r.Changed, []string{"echo"}) }},
	} {
		rep, err := h.Apply(ctx, parseFixtureConfig(t, base+c.extra))
		if err != nil || !c.check(rep) {
			t.Fatalf("step %d: %+v %v", i, rep, err)
		}
		if st := statusOf(h, "echo"); st.State != host.StateReady || st.Kind != host.KindPlugin {
			t.Fatalf("step %d: echo %s (%s)", i, st.State, st.LastError)
		}
		if res, err := h.CallTool(ctx, "echo__echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
			t.Fatalf("step %d: echo__echo: %v %v", i, err, res)
		}
	}
	rep, err := h.Apply(ctx, parseFixtureConfig(t, base))
	if err != nil || !slices.Equal(rep.Removed, []string{"echo"}) {
		t.Fatalf("removing the plugin: %+v %v", rep, err)
	}
	if _, err := h.CallTool(ctx, "echo__echo", nil); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("echo__echo after removal: %v", err)
	}
	// (The Wasm engine made for the plugin stays until Close: it holds the
	// compilation cache, and has no goroutine of its own.)
	if err := goleak.Find(ignore); err != nil {
		t.Errorf("goroutines after removing the plugin: %v", err)
	}
}

// TestApplyRemovesProfile: a View kept across an Apply that removes its
// profile refuses everything (ErrUnknownProfile for tools; no prompt or
// resource), and one whose profile changed follows the new profile.
func TestApplyRemovesProfile(t *testing.T) {
	const toml = `
[servers.fx]
command = "@FIXTURE@"

[profiles.gone]
allow = ["fx__*"]

[profiles.narrow]
allow = ["fx__echo", "fx__add"]
`
	h := newHost(t, toml)
	ctx := context.Background()
	goneView, err := h.Profile("gone")
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := h.Profile("narrow")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Apply(ctx, parseFixtureConfig(t, "[servers.fx]\ncommand = \"@FIXTURE@\"\n\n[profiles.narrow]\nallow = [\"fx__add\"]\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := goneView.Tools(ctx); !errors.Is(err, host.ErrUnknownProfile) {
		t.Errorf("Tools of a removed profile: %v, want ErrUnknownProfile", err)
	}
	if _, err := goneView.CallTool(ctx, "fx__echo", map[string]any{"text": "x"}); !errors.Is(err, host.ErrUnknownProfile) {
		t.Errorf("CallTool of a removed profile: %v, want ErrUnknownProfile", err)
	}
	if ps, err := goneView.Prompts(ctx); err != nil || len(ps) != 0 {
		t.Errorf("Prompts of a removed profile: %v %v, want none", ps, err)
	}
	if _, err := goneView.GetPrompt(ctx, "fx__greeting", map[string]string{"name": "x"}); err == nil {
		t.Error("GetPrompt of a removed profile: nil error")
	}
	if _, err := goneView.ReadResource(ctx, "fx", "fixture://readme"); err == nil {
		t.Error("ReadResource of a removed profile: nil error")
	}
	if got := toolNames(narrow.Tools(ctx)); !slices.Equal(got, []string{"fx__add"}) {
		t.Errorf("the changed profile's tools: %v, want [fx__add]", got)
	}
	if _, err := narrow.CallTool(ctx, "fx__echo", map[string]any{"text": "x"}); !errors.Is(err, host.ErrToolNotAllowed) {
		t.Errorf("fx__echo, no longer in the changed profile: %v", err)
	}
}

// TestCloseDuringApply: Close while Apply waits for a backend that never
// finishes starting ends both, with its process gone.
func TestCloseDuringApply(t *testing.T) {
	const base = "[servers.a]\ncommand = \"@FIXTURE@\"\n"
	// The hanging server's first stderr line, logged by the host, tells
	// that it runs (a state event does not: it is starting from the first).
	started := make(chan struct{})
	var once sync.Once
	logger := hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Info, Output: writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "host.hang") && strings.Contains(string(p), "mcpfixture: starting") {
			once.Do(func() { close(started) })
		}
		t.Log(strings.TrimRight(string(p), "\n"))
		return len(p), nil
	})})
	// The grace is what a to exit on its own when its stdin closes may take on
	// a busy machine (500ms was not always enough: "a: server needed SIGTERM
	// to exit"); hang ignores it and waits the grace out.
	h, err := host.New(context.Background(), parseFixtureConfig(t, base), &host.Options{Logger: logger, TerminateGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	done := make(chan error, 1)
	next := parseFixtureConfig(t, base+"\n[servers.hang]\ncommand = \"@FIXTURE@\"\nargs = [\"-mode=hang\"]\nstartup_timeout = \"10m\"\n")
	go func() {
		_, err := h.Apply(context.Background(), next)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the hanging server did not start within a minute")
	}
	pid := statusOf(h, "hang").Pid
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Apply ended by Close: %v", err)
	}
	if st := statusOf(h, "hang"); st.State != host.StateClosed {
		t.Errorf("hang after Close: %s", st.State)
	}
	if pid != 0 {
		gone(t, "hang", pid)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestCustomMaxOutputNamesItsOption: a backend of Host.Add has no
// [servers.NAME] table, so a result over its MaxOutput names
// BackendOptions.MaxOutput, not a table that does not exist.
func TestCustomMaxOutputNamesItsOption(t *testing.T) {
	h := newHost(t, "")
	ctx := context.Background()
	newTr := func() transport.Transport { return newGoTools(demoTools()) }
	if err := h.Add(ctx, "go", newTr, &host.BackendOptions{MaxOutput: 16}); err != nil {
		t.Fatal(err)
	}
	_, err := h.CallTool(ctx, "go__echo", map[string]any{"text": strings.Repeat("x", 64)})
	if !errors.Is(err, host.ErrOutputTooLarge) {
		t.Fatalf("echo of 64 bytes with MaxOutput 16: %v, want ErrOutputTooLarge", err)
	}
	if msg := err.Error(); strings.Contains(msg, "[servers.") || !strings.Contains(msg, "BackendOptions.MaxOutput") {
		t.Errorf("error names the wrong limit: %s", msg)
	}
}

// TestConfigDisabled: a backend with enabled = false in the configuration
// (eager or lazy) starts no process, even when one of its tools is called:
// the call fails with ErrBackendUnavailable and ErrBackendDisabled saying
// how to enable it, Status shows it disabled, and its tools are not in the
// catalogue. Apply with enabled = true starts it; Apply with enabled =
// false again stops its process. Host.Enable does not override the file.
func TestConfigDisabled(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	// The server's command records every start in marker, then becomes
	// the fixture: a start of a disabled backend cannot go unseen.
	tmpl := `
[servers.a]
command = "/bin/sh"
args = ["-c", "echo a >> '` + marker + `'; exec '@FIXTURE@'"]
description = "the one under test"
ENABLED_A

[servers.lazy]
command = "/bin/sh"
args = ["-c", "echo lazy >> '` + marker + `'; exec '@FIXTURE@'"]
start = "lazy"
enabled = false

[servers.b]
command = "@FIXTURE@"

[profiles.p]
recommends = ["lazy"]
`
	off := strings.Replace(tmpl, "ENABLED_A", "enabled = false", 1)
	on := strings.Replace(tmpl, "ENABLED_A", "enabled = true", 1)
	h := newHost(t, off)
	ctx := context.Background()
	noStart := func(when string) {
		t.Helper()
		if b, err := os.ReadFile(marker); err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: a disabled backend was started (%q, %v)", when, b, err)
		}
	}
	for _, name := range []string{"a", "lazy"} {
		st := statusOf(h, name)
		if st.State != host.StateDisabled || st.Pid != 0 || !errors.Is(st.Err, host.ErrBackendDisabled) {
			t.Fatalf("%s: %s pid %d (%v), want disabled with no process", name, st.State, st.Pid, st.Err)
		}
		_, err := h.CallTool(ctx, name+"__echo", map[string]any{"text": "x"})
		if !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, host.ErrBackendDisabled) || !strings.Contains(err.Error(), "enabled = false") {
			t.Fatalf("calling %s__echo: %v, want ErrBackendUnavailable and ErrBackendDisabled naming enabled = false", name, err)
		}
	}
	if names := catalogue(t, h); slices.Contains(names, "a__echo") || slices.Contains(names, "lazy__echo") || !slices.Contains(names, "b__echo") {
		t.Fatalf("catalogue: %v, want b's tools only", names)
	}
	if _, err := h.Profile("p"); err != nil {
		t.Fatalf("a profile recommending a disabled backend: %v", err)
	}
	if err := h.Enable(ctx, "a"); !errors.Is(err, host.ErrBackendDisabled) {
		t.Fatalf("Enable of a backend disabled by its configuration: %v, want ErrBackendDisabled", err)
	}
	if err := h.Disable(ctx, "a"); err != nil {
		t.Fatalf("Disable of a backend disabled by its configuration: %v", err)
	}
	if err := h.Restart(ctx, "a"); !errors.Is(err, host.ErrBackendDisabled) {
		t.Fatalf("Restart of a disabled backend: %v, want ErrBackendDisabled", err)
	}
	noStart("after New, calls, Enable and Restart")

	rep, err := h.Apply(ctx, parseFixtureConfig(t, on))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Changed, []string{"a"}) || !slices.Equal(rep.Disabled, []string{"lazy"}) {
		t.Fatalf("Apply enabling a: %+v, want a changed and lazy disabled", rep)
	}
	st := statusOf(h, "a")
	if st.State != host.StateReady || st.Pid == 0 {
		t.Fatalf("a after Apply with enabled = true: %s pid %d (%s)", st.State, st.Pid, st.LastError)
	}
	if res, err := h.CallTool(ctx, "a__echo", map[string]any{"text": "on"}); err != nil || res.IsError {
		t.Fatalf("a__echo once enabled: %v %v", err, res)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "a\n" {
		t.Fatalf("starts recorded: %q (%v), want a's only", b, err)
	}

	rep, err = h.Apply(ctx, parseFixtureConfig(t, off))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Changed, []string{"a"}) || !slices.Equal(rep.Disabled, []string{"a", "lazy"}) {
		t.Fatalf("Apply disabling a: %+v", rep)
	}
	gone(t, "a disabled by Apply", st.Pid)
	if st := statusOf(h, "a"); st.State != host.StateDisabled || st.Pid != 0 {
		t.Fatalf("a after Apply with enabled = false: %s pid %d", st.State, st.Pid)
	}
	if names := catalogue(t, h); slices.Contains(names, "a__echo") {
		t.Fatalf("catalogue after disabling a: %v", names)
	}
	if _, err := h.CallTool(ctx, "a__echo", map[string]any{"text": "x"}); !errors.Is(err, host.ErrBackendDisabled) {
		t.Fatalf("a__echo after Apply disabled it: %v, want ErrBackendDisabled", err)
	}
}
