package host_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/pgtest"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
	"github.com/toolhost/toolhost/transport"
)

// faultConfig is the victim (a fixture server with fault tools, quick to
// restart and health-checked every 200ms) and two bystanders: another stdio
// server and a Wasm plugin, which must keep answering throughout.
const faultConfig = `
[servers.victim]
command = "@FIXTURE@"
args = ["-faults" @ARGS@]
timeout = "1s"
health_interval = "200ms"
health_timeout = "1s"
health_threshold = 2
restart_backoff = { min = "20ms", max = "200ms" }
max_restarts = 50
@VICTIM@

[servers.other]
command = "@FIXTURE@"

[plugins.wasm]
path = "@ECHO@"
@EXTRA@
`

type faultHost struct {
	*host.Host
	t      *testing.T
	events chan host.Event
	logs   *testutil.Buffer
}

// newFaultHost starts a host on faultConfig with the victim's extra
// arguments (`, "-crash-after", "2"`) and extra TOML.
func newFaultHost(t *testing.T, args, extra string) *faultHost {
	t.Helper()
	return newFaultHostVictim(t, args, "", extra)
}

// newFaultHostVictim is newFaultHost with extra keys for the victim's table.
func newFaultHostVictim(t *testing.T, args, victim, extra string) *faultHost {
	t.Helper()
	dir := filepath.Join(testutil.Root(), "testdata", "plugins")
	toml := strings.NewReplacer("@ARGS@", args, "@VICTIM@", victim, "@EXTRA@", extra).Replace(faultConfig)
	toml = strings.NewReplacer("@FIXTURE@", testutil.Fixture(t), "@ECHO@", wasmbuild.Build(t, dir, "./echo")).Replace(toml)
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "fault.toml", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fh := &faultHost{t: t, events: make(chan host.Event, 1000), logs: &testutil.Buffer{}}
	ignore := goleak.IgnoreCurrent()
	h, err := host.New(context.Background(), cfg, &host.Options{
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Output: fh.logs, Level: hclog.Debug}),
		TerminateGrace: 200 * time.Millisecond,
		Events: func(ev host.Event) {
			select {
			case fh.events <- ev:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fh.Host = h
	t.Cleanup(func() {
		h.Close()
		// After every fault test: no goroutine and no child process left.
		goleak.VerifyNone(t, ignore)
		if kids := children(); len(kids) > 0 {
			t.Errorf("child processes left after Close: %v", kids)
		}
		if t.Failed() {
			t.Log(fh.logs.String())
		}
	})
	return fh
}

// children lists the test process's child processes (zombies included),
// from /proc.
func children() []string {
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may contain spaces, so split
		// after its closing parenthesis.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == self && !isPgtest(d) {
			out = append(out, strings.TrimSpace(s[:i+1])+" "+f[0])
		}
	}
	return out
}

// isPgtest reports whether /proc/PID/stat is the test binary's PostgreSQL
// (the store tests' server, stopped by TestMain, not by a Host).
func isPgtest(stat string) bool {
	pid := pgtest.PID()
	return pid != 0 && stat == "/proc/"+strconv.Itoa(pid)+"/stat"
}

// echo calls name (an echo tool) and checks the answer.
func (fh *faultHost) echo(ctx context.Context, name string) error {
	res, err := fh.CallTool(ctx, name, map[string]any{"text": "ping"})
	if err != nil {
		return err
	}
	if res.IsError || !strings.Contains(resultString(res), "ping") {
		return fmt.Errorf("%s answered %q (isError %v)", name, resultString(res), res.IsError)
	}
	return nil
}

func resultString(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// bystanders calls the other backends' tools without pause until the
// returned function is called, which fails the test on any error.
func (fh *faultHost) bystanders() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var calls atomic.Int64
	first := make(chan struct{}) // closed when a bystander call has completed
	var firstOnce sync.Once
	errs := make(chan error, 100)
	for _, name := range []string{"other__echo", "wasm__echo"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := fh.echo(context.Background(), name); err != nil {
					select {
					case errs <- fmt.Errorf("%s: %w", name, err):
					default:
					}
				}
				calls.Add(1)
				firstOnce.Do(func() { close(first) })
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return func() {
		// A fault that heals fast may be over before a bystander call
		// completes on a busy machine: let one complete (bounded).
		select {
		case <-first:
		case <-time.After(30 * time.Second):
		}
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			fh.t.Errorf("bystander call failed during the fault: %v", err)
		}
		if calls.Load() == 0 {
			fh.t.Error("no bystander call was made")
		}
	}
}

// recovered checks that the victim comes back (a new process), answers, and
// was restarted by policy.
func (fh *faultHost) recovered(oldPid int) {
	fh.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The next call waits for the restart and succeeds.
	if err := fh.echo(ctx, "victim__echo"); err != nil {
		fh.t.Fatalf("call after the fault: %v", err)
	}
	st := statusOf(fh.Host, "victim")
	if st.State != host.StateReady || st.Restarts < 1 || st.Pid == 0 || st.Pid == oldPid {
		fh.t.Errorf("victim after the fault: %+v, want ready, restarted, with a new pid", st)
	}
	if oldPid != 0 {
		waitGone(fh.t, oldPid)
	}
}

// kill9 sends SIGKILL to the process pid (never to a group: pid 0 would
// kill the test's own).
func kill9(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no process to kill (pid %d)", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// busySlack is the scheduling delay a busy machine may add to a wall-clock
// bound (see promptly).
const busySlack = 2 * time.Second

// promptly fails the test when more than limit passed since t0.
//
// limit is what the path takes on an idle machine, and is logged; the test
// fails only past limit+busySlack, because under -race with both cores busy
// scheduling alone can take hundreds of milliseconds. Each caller also checks
// the error's kind, which is what tells the prompt path from the slow one (a
// deadline, or the call running to its end).
func promptly(t *testing.T, what string, t0 time.Time, limit time.Duration) {
	t.Helper()
	if d := time.Since(t0); d > limit+busySlack {
		t.Errorf("%s after %v, want within %v (+%v on a busy machine)", what, d.Round(time.Millisecond), limit, busySlack)
	} else {
		t.Logf("%s after %v (%v on an idle machine)", what, d.Round(time.Microsecond), limit)
	}
}

// The fault tests: each fault of a real server process gives the caller a
// distinct error promptly, the server is restarted by policy, the next call
// succeeds, and the other backends answer throughout.

func TestFaultCrashAfterN(t *testing.T) {
	fh := newFaultHost(t, `, "-crash-after", "2"`, "")
	stop := fh.bystanders()
	ctx := context.Background()
	pid := statusOf(fh.Host, "victim").Pid
	for i := range 2 {
		if err := fh.echo(ctx, "victim__echo"); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	t0 := time.Now()
	err := fh.echo(ctx, "victim__echo")
	if !errors.Is(err, host.ErrConnectionLost) || !strings.Contains(err.Error(), "exited with status 9") {
		t.Fatalf("third call: %v, want ErrConnectionLost naming exit status 9", err)
	}
	promptly(t, "crash reported", t0, 100*time.Millisecond)
	fh.recovered(pid)
	stop()
}

func TestFaultKill9MidCall(t *testing.T) {
	fh := newFaultHost(t, "", "")
	stop := fh.bystanders()
	pid := statusOf(fh.Host, "victim").Pid
	errc := inFlight(t, fh.Host, func() error {
		_, err := fh.CallTool(context.Background(), "victim__sleep", map[string]any{"ms": 5000})
		return err
	})
	t0 := time.Now()
	kill9(t, pid)
	err := <-errc
	promptly(t, "kill -9 reported", t0, 100*time.Millisecond)
	if !errors.Is(err, host.ErrConnectionLost) || !strings.Contains(err.Error(), "killed by signal killed") {
		t.Fatalf("call in flight: %v, want ErrConnectionLost naming SIGKILL", err)
	}
	fh.recovered(pid)
	stop()
}

func TestFaultHang(t *testing.T) {
	fh := newFaultHost(t, "", "")
	stop := fh.bystanders()
	pid := statusOf(fh.Host, "victim").Pid
	t0 := time.Now()
	// freeze stops the whole process (SIGSTOP): nothing answers any more,
	// so the call ends at its deadline (the victim's timeout, 1s).
	res, err := fh.CallTool(context.Background(), "victim__freeze", nil)
	if !errors.Is(err, host.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call to a hung server: %v %+v, want ErrTimeout", err, res)
	}
	if d := time.Since(t0); d < time.Second || d > time.Second+busySlack {
		t.Errorf("hung call returned after %v, want at its 1s deadline", d)
	}
	// Failed health checks (ping; an immediate one after the timeout, then
	// the next scheduled one) restart it.
	testutil.Eventually(t, 10*time.Second, func() bool { return statusOf(fh.Host, "victim").Restarts != 0 },
		func() string { return fmt.Sprintf("hung server not restarted: %+v", statusOf(fh.Host, "victim")) })
	fh.recovered(pid)
	if st := statusOf(fh.Host, "victim"); !errors.Is(st.Err, host.ErrUnhealthy) {
		t.Errorf("last error %v, want ErrUnhealthy", st.Err)
	}
	stop()
}

func TestFaultSlow(t *testing.T) {
	fh := newFaultHost(t, "", "")
	stop := fh.bystanders()
	ctx := context.Background()
	pid := statusOf(fh.Host, "victim").Pid
	// Slow but within the deadline: a result.
	res, err := fh.CallTool(ctx, "victim__sleep", map[string]any{"ms": 300})
	if err != nil || resultString(res) != "slept 300ms" {
		t.Fatalf("slow call: %v %v", res, err)
	}
	// Slower than the deadline: ErrTimeout at the deadline, and the server
	// is told (notifications/cancelled) and stays up.
	t0 := time.Now()
	_, err = fh.CallTool(ctx, "victim__sleep", map[string]any{"ms": 5000})
	if !errors.Is(err, host.ErrTimeout) {
		t.Fatalf("too slow call: %v, want ErrTimeout", err)
	}
	promptly(t, "deadline reported", t0, 1100*time.Millisecond)
	if err := fh.echo(ctx, "victim__echo"); err != nil {
		t.Fatal(err)
	}
	waitCancelled(t, fh.Host, 1)
	if st := statusOf(fh.Host, "victim"); st.Pid != pid || st.Restarts != 0 {
		t.Errorf("a slow answer must not restart the server: %+v", st)
	}
	stop()
}

// waitCancelled waits until the victim says n calls were cancelled by the
// client (its stats tool).
func waitCancelled(t *testing.T, h *host.Host, n float64) {
	t.Helper()
	var got float64
	testutil.Eventually(t, 5*time.Second, func() bool { got = victimStats(t, h)["cancelled"]; return got >= n },
		func() string {
			return fmt.Sprintf("server saw %v cancelled calls, want %v (notifications/cancelled not received)", got, n)
		})
}

// victimStats returns the victim's counters (its stats tool): "calls" (tool
// calls received, this one included) and "cancelled".
func victimStats(t *testing.T, h *host.Host) map[string]float64 {
	t.Helper()
	res, err := h.CallTool(context.Background(), "victim__stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	out := map[string]float64{}
	for k, v := range m {
		out[k], _ = v.(float64)
	}
	return out
}

// inFlight starts call (a call to the victim that lasts) on a goroutine and
// returns once the victim has received it (its stats count it), with the
// channel of call's error: the fixture's signal that the call is in flight.
func inFlight(t *testing.T, h *host.Host, call func() error) <-chan error {
	t.Helper()
	before := victimStats(t, h)["calls"]
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	// (before counts the stats call that read it; a later one sees the
	// started call and itself on top.)
	testutil.Eventually(t, time.Minute, func() bool { return victimStats(t, h)["calls"] >= before+2 },
		"the victim never received the call")
	return errc
}

func TestFaultCancel(t *testing.T) {
	fh := newFaultHost(t, "", "")
	ctx, cancel := context.WithCancel(context.Background())
	errc := inFlight(t, fh.Host, func() error {
		_, err := fh.CallTool(ctx, "victim__sleep", map[string]any{"ms": 5000})
		return err
	})
	t0 := time.Now()
	cancel()
	err := <-errc
	promptly(t, "cancellation returned", t0, 100*time.Millisecond)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	waitCancelled(t, fh.Host, 1)
	// A cancellation is not a failure of the backend.
	if st := statusOf(fh.Host, "victim"); st.Restarts != 0 || st.Circuit != host.CircuitClosed {
		t.Errorf("after a cancelled call: %+v", st)
	}
}

func TestFaultGarbage(t *testing.T) {
	fh := newFaultHostVictim(t, "", "strict_stdout = true", "")
	stop := fh.bystanders()
	pid := statusOf(fh.Host, "victim").Pid
	t0 := time.Now()
	_, err := fh.CallTool(context.Background(), "victim__garbage", nil)
	promptly(t, "protocol violation reported", t0, 100*time.Millisecond)
	if !errors.Is(err, transport.ErrProtocol) || !strings.Contains(err.Error(), "oops: this is not JSON-RPC") {
		t.Fatalf("garbage on stdout: %v, want ErrProtocol quoting the line", err)
	}
	fh.recovered(pid)
	stop()
}

func TestFaultExitDuringInitialize(t *testing.T) {
	once := filepath.Join(t.TempDir(), "started")
	fh := newFaultHost(t, fmt.Sprintf(`, "-mode", "exit-init", "-once", %q`, once), "")
	stop := fh.bystanders()
	// The first start failed; wait for the restart (a new process, without
	// the fault) to be ready, so that the status below is that of a
	// backend that healed (a call now would wait for it too, within its
	// deadline: see TestCallWaitsForComingBackend).
	deadline := time.After(60 * time.Second)
	for statusOf(fh.Host, "victim").State != host.StateReady {
		select {
		case <-fh.events:
		case <-deadline:
			t.Fatalf("victim not ready after its restart: %+v", statusOf(fh.Host, "victim"))
		}
	}
	if err := fh.echo(context.Background(), "victim__echo"); err != nil {
		t.Fatalf("call after a failed first start: %v", err)
	}
	st := statusOf(fh.Host, "victim")
	if st.State != host.StateReady || st.Restarts != 1 || !errors.Is(st.Err, transport.ErrInitialize) || !strings.Contains(st.LastError, "status 3") {
		t.Errorf("victim: %+v, want ready after 1 restart, last error the failed initialize", st)
	}
	stop()
}

func TestFaultCloseStdout(t *testing.T) {
	fh := newFaultHost(t, "", "")
	stop := fh.bystanders()
	pid := statusOf(fh.Host, "victim").Pid
	t0 := time.Now()
	_, err := fh.CallTool(context.Background(), "victim__close_stdout", nil)
	promptly(t, "closed stdout reported", t0, 100*time.Millisecond)
	if !errors.Is(err, host.ErrConnectionLost) || !strings.Contains(err.Error(), "closed its stdout") {
		t.Fatalf("closed stdout: %v, want ErrConnectionLost saying so", err)
	}
	// The process still running is stopped (stdin closed, SIGTERM).
	fh.recovered(pid)
	stop()
}

func TestFaultPluginTraps(t *testing.T) {
	dir := filepath.Join(testutil.Root(), "testdata", "plugins")
	fh := newFaultHost(t, "", fmt.Sprintf(`
[plugins.panicky]
path = %q
health_threshold = 2
restart_backoff = { min = "10ms", max = "50ms" }
`, wasmbuild.Build(t, dir, "./panic")))
	ctx := context.Background()
	for i := range 2 {
		_, err := fh.CallTool(ctx, "panicky__panic", map[string]any{"text": "boom"})
		if err == nil {
			t.Fatalf("call %d of a panicking plugin succeeded", i+1)
		}
	}
	// Two consecutive traps: its instances are rebuilt (a restart).
	testutil.Eventually(t, 5*time.Second, func() bool { return statusOf(fh.Host, "panicky").Restarts >= 1 },
		func() string {
			return fmt.Sprintf("plugin not restarted after repeated traps: %+v", statusOf(fh.Host, "panicky"))
		})
	waitState(t, fh.Host, "panicky", host.StateReady)
	if err := fh.echo(ctx, "wasm__echo"); err != nil {
		t.Fatal(err)
	}
}

func TestCircuitBreakerPerTool(t *testing.T) {
	fh := newFaultHost(t, "", `
[servers.flaky]
command = "@FIXTURE@"
timeout = "1s" # a busy machine under -race can take 100ms+ for a round trip
health_check = "none"
circuit_breaker = { failures = 3, cooldown = "300ms", successes = 2 }
`)
	ctx := context.Background()
	// Three timeouts of one tool open that tool's circuit; successes of
	// another tool in between keep the backend's closed.
	for i := range 3 {
		if _, err := fh.CallTool(ctx, "flaky__sleep", map[string]any{"ms": 5000}); !errors.Is(err, host.ErrTimeout) {
			t.Fatalf("slow call %d: %v, want ErrTimeout", i+1, err)
		}
		if err := fh.echo(ctx, "flaky__echo"); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	_, err := fh.CallTool(ctx, "flaky__sleep", map[string]any{"ms": 10})
	promptly(t, "open circuit refused the call", t0, 10*time.Millisecond)
	var coe *host.CircuitOpenError
	if !errors.As(err, &coe) || !errors.Is(err, host.ErrCircuitOpen) || coe.Tool != "flaky__sleep" || coe.Failures != 3 {
		t.Fatalf("call with an open circuit: %v, want a CircuitOpenError for flaky__sleep", err)
	}
	if d := time.Until(coe.RetryAt); d <= 0 || d > 300*time.Millisecond {
		t.Errorf("RetryAt in %v, want within the 300ms cooldown", d)
	}
	if !strings.Contains(err.Error(), "until") {
		t.Errorf("error %q should say when calls are let through again", err)
	}
	st := statusOf(fh.Host, "flaky")
	if st.Circuit != host.CircuitClosed || len(st.OpenTools) != 1 || st.OpenTools[0] != "flaky__sleep" {
		t.Errorf("status: circuit %s, open tools %v; want the backend closed and flaky__sleep open", st.Circuit, st.OpenTools)
	}
	if err := fh.echo(ctx, "flaky__echo"); err != nil {
		t.Fatalf("another tool of the backend: %v", err)
	}
	// After the cooldown: half-open; two successes close it.
	time.Sleep(time.Until(coe.RetryAt) + 20*time.Millisecond)
	for i := range 2 {
		if _, err := fh.CallTool(ctx, "flaky__sleep", map[string]any{"ms": 1}); err != nil {
			t.Fatalf("trial call %d: %v", i+1, err)
		}
	}
	if st := statusOf(fh.Host, "flaky"); len(st.OpenTools) != 0 {
		t.Errorf("after two successful trial calls: open tools %v", st.OpenTools)
	}
	var sawOpen bool
	for len(fh.events) > 0 {
		ev := <-fh.events
		sawOpen = sawOpen || ev.Kind == host.EventCircuit && ev.Tool == "flaky__sleep" && ev.Circuit == host.CircuitOpen
	}
	if !sawOpen {
		t.Error("no EventCircuit for the tool's circuit opening")
	}
}

func TestCircuitBreakerPerBackend(t *testing.T) {
	fh := newFaultHost(t, "", `
[servers.flaky]
command = "@FIXTURE@"
args = ["-faults"]
timeout = "100ms"
health_check = "none"
circuit_breaker = { failures = 3, cooldown = "1m" }
`)
	ctx := context.Background()
	// Three failures in a row across two tools open the backend's circuit.
	for _, call := range []struct {
		tool string
		args any
	}{{"flaky__sleep", map[string]any{"ms": 1000}}, {"flaky__hang", nil}, {"flaky__sleep", map[string]any{"ms": 1000}}} {
		if _, err := fh.CallTool(ctx, call.tool, call.args); !errors.Is(err, host.ErrTimeout) {
			t.Fatalf("%s: %v, want ErrTimeout", call.tool, err)
		}
	}
	_, err := fh.CallTool(ctx, "flaky__echo", map[string]any{"text": "x"})
	var coe *host.CircuitOpenError
	if !errors.As(err, &coe) || coe.Tool != "" || coe.Backend != "flaky" {
		t.Fatalf("echo on a backend with an open circuit: %v, want the backend's CircuitOpenError", err)
	}
	if st := statusOf(fh.Host, "flaky"); st.Circuit != host.CircuitOpen {
		t.Errorf("status circuit %s, want open", st.Circuit)
	}
	// A restart (here: explicit) gives the backend fresh breakers.
	if err := fh.Restart(ctx, "flaky"); err != nil {
		t.Fatal(err)
	}
	if err := fh.echo(ctx, "flaky__echo"); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
}

func TestFallbackAndAudit(t *testing.T) {
	var mu sync.Mutex
	var recs []host.AuditRecord
	dir := filepath.Join(testutil.Root(), "testdata", "plugins")
	toml := strings.NewReplacer("@FIXTURE@", testutil.Fixture(t), "@ECHO@", wasmbuild.Build(t, dir, "./echo"), "@ARGS@", "", "@VICTIM@", "", "@EXTRA@", `
[servers.primary]
command = "@FIXTURE@"
timeout = "100ms"

[tools.primary__sleep]
fallback = "other__sleep"
`).Replace(faultConfig)
	toml = strings.ReplaceAll(toml, "@FIXTURE@", testutil.Fixture(t))
	cfg, err := config.Parse([]byte(toml), &config.Options{Name: "fallback.toml"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), cfg, &host.Options{TerminateGrace: 200 * time.Millisecond, Audit: func(r host.AuditRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res, err := h.CallTool(context.Background(), "primary__sleep", map[string]any{"ms": 300})
	if err != nil || resultString(res) != "slept 300ms" {
		t.Fatalf("call with a fallback: %v %v, want the fallback's result", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2: %+v", len(recs), recs)
	}
	fb, primary := recs[0], recs[1] // the fallback's record is written first
	if primary.Tool != "primary__sleep" || primary.Outcome != host.OutcomeTimeout || primary.Fallback != "other__sleep" {
		t.Errorf("primary record %+v, want a timeout that used other__sleep", primary)
	}
	if fb.Tool != "other__sleep" || fb.Outcome != host.OutcomeOK || fb.FallbackFor != "primary__sleep" || fb.ArgsHMAC != primary.ArgsHMAC {
		t.Errorf("fallback record %+v, want ok, fallback_for primary__sleep, same arguments", fb)
	}
}

func TestRetryIdempotentTool(t *testing.T) {
	// The server crashes on every second call. victim__echo is marked
	// idempotent, so a call that crashed it is sent again to the restarted
	// server; victim__add is not, so its call fails.
	fh := newFaultHost(t, `, "-crash-after", "1"`, `
[tools.victim__echo]
retry = true
`)
	ctx := context.Background()
	if err := fh.echo(ctx, "victim__echo"); err != nil {
		t.Fatal(err)
	}
	if err := fh.echo(ctx, "victim__echo"); err != nil {
		t.Fatalf("idempotent call that crashed the server: %v, want it retried", err)
	}
	if _, err := fh.CallTool(ctx, "victim__add", map[string]any{"a": 1, "b": 2}); !errors.Is(err, host.ErrConnectionLost) {
		t.Fatalf("non-idempotent call that crashed the server: %v, want ErrConnectionLost", err)
	}
}

func TestRestartPolicy(t *testing.T) {
	fh := newFaultHost(t, "", `
[servers.doomed]
command = "@FIXTURE@"
args = ["-mode", "exit-init"]
max_restarts = 2
restart_backoff = { min = "10ms", max = "20ms" }
`)
	ctx := context.Background()
	st := waitState(t, fh.Host, "doomed", host.StateFailed)
	if st.Restarts != 2 || !strings.Contains(st.LastError, "gave up after 2 restarts") || !errors.Is(st.Err, transport.ErrInitialize) {
		t.Errorf("doomed: %+v, want failed after 2 restarts", st)
	}
	// Its tools are not known, but the name is its: the call says why it
	// cannot be made, not "unknown tool".
	if _, err := fh.CallTool(ctx, "doomed__echo", nil); !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, transport.ErrInitialize) {
		t.Errorf("a call to a backend that never started: %v, want ErrBackendUnavailable with its error", err)
	}
	if err := fh.Restart(ctx, "doomed"); !errors.Is(err, host.ErrBackendUnavailable) || !errors.Is(err, transport.ErrInitialize) {
		t.Errorf("Restart of a backend that still fails: %v", err)
	}
	if err := fh.Restart(ctx, "nope"); !errors.Is(err, host.ErrUnknownBackend) {
		t.Errorf("Restart of an unknown backend: %v", err)
	}
}

func TestRestartExplicit(t *testing.T) {
	fh := newFaultHost(t, "", `
[servers.once]
command = "@FIXTURE@"
max_restarts = 0
`)
	ctx := context.Background()
	pid := statusOf(fh.Host, "once").Pid
	kill9(t, pid)
	st := waitState(t, fh.Host, "once", host.StateFailed)
	if !strings.Contains(st.LastError, "max_restarts = 0") {
		t.Errorf("last error %q", st.LastError)
	}
	tools, _ := fh.Tools(ctx)
	for _, tool := range tools {
		if tool.Backend == "once" {
			t.Fatalf("a failed backend's tool %s is listed", tool.Name)
		}
	}
	t0 := time.Now()
	if _, err := fh.CallTool(ctx, "once__echo", map[string]any{"text": "x"}); !errors.Is(err, host.ErrBackendUnavailable) {
		t.Fatalf("call to a failed backend: %v, want ErrBackendUnavailable", err)
	}
	promptly(t, "failed backend refused the call", t0, 10*time.Millisecond)
	if err := fh.Restart(ctx, "once"); err != nil {
		t.Fatal(err)
	}
	if err := fh.echo(ctx, "once__echo"); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(fh.Host, "once"); st.Restarts != 1 || st.Pid == pid {
		t.Errorf("after Restart: %+v", st)
	}
}

func TestLazyAndIdle(t *testing.T) {
	fh := newFaultHost(t, "", `
[servers.lazy]
command = "@FIXTURE@"
start = "lazy"
idle_timeout = "300ms"
`)
	ctx := context.Background()
	if st := statusOf(fh.Host, "lazy"); st.State != host.StateIdle || st.Pid != 0 {
		t.Fatalf("lazy backend after New: %+v, want idle with no process", st)
	}
	tools, err := fh.Tools(ctx) // first use: starts it
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools, func(tl host.Tool) bool { return tl.Name == "lazy__echo" }) {
		t.Fatal("lazy backend's tools not listed after it started")
	}
	pid := statusOf(fh.Host, "lazy").Pid
	if err := fh.echo(ctx, "lazy__echo"); err != nil {
		t.Fatal(err)
	}
	// No call for idle_timeout: stopped, its tools stay listed.
	st := waitState(t, fh.Host, "lazy", host.StateIdle)
	waitGone(t, pid)
	if st.Tools == 0 {
		t.Errorf("idle backend: %+v, want its tools kept", st)
	}
	tools, _ = fh.Tools(ctx)
	if !slices.ContainsFunc(tools, func(tl host.Tool) bool { return tl.Name == "lazy__echo" }) {
		t.Error("an idle backend's tools left the listing")
	}
	// The next call starts it again.
	if err := fh.echo(ctx, "lazy__echo"); err != nil {
		t.Fatalf("call to an idle backend: %v", err)
	}
	if st := statusOf(fh.Host, "lazy"); st.State != host.StateReady || st.Pid == pid {
		t.Errorf("after the call: %+v", st)
	}
}

func TestListChanged(t *testing.T) {
	fh := newFaultHost(t, "", "")
	ctx := context.Background()
	catalogue := make(chan host.Event, 10)
	unsubscribe := fh.Subscribe(func(ev host.Event) {
		if ev.Kind == host.EventCatalogue {
			catalogue <- ev
		}
	})
	defer unsubscribe()
	if _, err := fh.CallTool(ctx, "victim__add_tool", map[string]any{"name": "fresh"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-catalogue:
		if !slices.Equal(ev.Added, []string{"victim__fresh"}) || len(ev.Removed) != 0 {
			t.Errorf("catalogue event %+v, want victim__fresh added", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no catalogue event after notifications/tools/list_changed")
	}
	res, err := fh.CallTool(ctx, "victim__fresh", nil)
	if err != nil || resultString(res) != "fresh" {
		t.Fatalf("new tool: %v %v", res, err)
	}
	if _, err := fh.CallTool(ctx, "victim__remove_tool", map[string]any{"name": "fresh"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-catalogue:
		if !slices.Equal(ev.Removed, []string{"victim__fresh"}) {
			t.Errorf("catalogue event %+v, want victim__fresh removed", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no catalogue event after the tool was removed")
	}
	if _, err := fh.CallTool(ctx, "victim__fresh", nil); !errors.Is(err, host.ErrUnknownTool) {
		t.Errorf("removed tool: %v, want ErrUnknownTool", err)
	}
	// The removed tool's circuit breaker went with it.
	if names := host.ToolBreakers(fh.Host, "victim"); slices.Contains(names, "victim__fresh") || !slices.Contains(names, "victim__add_tool") {
		t.Errorf("victim's tool breakers after victim__fresh was removed: %v", names)
	}
}

func TestEventsOfARestart(t *testing.T) {
	fh := newFaultHost(t, "", "")
	pid := statusOf(fh.Host, "victim").Pid
	for len(fh.events) > 0 {
		<-fh.events
	}
	kill9(t, pid)
	var states []host.State
	deadline := time.After(10 * time.Second)
	for !slices.Contains(states, host.StateReady) {
		select {
		case ev := <-fh.events:
			// (Events are delivered in order but after the fact: the
			// victim's first ready can still be on its way when the
			// drain above ran, so the states of the restart are counted
			// from its restarting on.)
			if ev.Kind == host.EventState && ev.Backend == "victim" && (len(states) > 0 || ev.State != host.StateReady) {
				states = append(states, ev.State)
				if ev.State == host.StateRestarting && !errors.Is(ev.Err, host.ErrConnectionLost) {
					t.Errorf("restarting event error %v, want ErrConnectionLost", ev.Err)
				}
			}
		case <-deadline:
			t.Fatalf("states seen %v, want restarting, starting, ready", states)
		}
	}
	if !slices.Equal(states, []host.State{host.StateRestarting, host.StateStarting, host.StateReady}) {
		t.Errorf("states %v, want restarting, starting, ready", states)
	}
}

func TestHTTPSessionDroppedMidUse(t *testing.T) {
	// A real fixture server over Streamable HTTP, behind a proxy that can
	// make it forget every session (it then answers 404, as a restarted
	// server does).
	bin := testutil.Fixture(t)
	port := testutil.FreePort(t)
	cmd := exec.Command(bin, "-http", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	var mu sync.Mutex
	seen, dropped := map[string]bool{}, map[string]bool{}
	drop := func() { // forget every session seen so far
		mu.Lock()
		defer mu.Unlock()
		for id := range seen {
			dropped[id] = true
		}
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		mu.Lock()
		gone := dropped[id]
		if id != "" {
			seen[id] = true
		}
		mu.Unlock()
		if gone {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/", port))

	h := newHost(t, fmt.Sprintf(`
[servers.remote]
url = "http://%s/mcp"
`, ln.Addr()))
	ctx := context.Background()
	call := func() error {
		res, err := h.CallTool(ctx, "remote__echo", map[string]any{"text": "hi"})
		if err == nil && resultString(res) != "hi" {
			err = fmt.Errorf("echo answered %q", resultString(res))
		}
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	drop()
	if err := call(); err != nil {
		t.Fatalf("call after the server dropped the session: %v", err)
	}
	if err := call(); err != nil {
		t.Fatalf("call on the new session: %v", err)
	}
	if st := statusOf(h, "remote"); st.State != host.StateReady || st.Restarts != 0 {
		t.Errorf("a re-initialized session is not a restart: %+v", st)
	}
}

// waitHTTP waits until something answers at u.
func waitHTTP(t *testing.T, u string) {
	t.Helper()
	var err error
	testutil.Eventually(t, 10*time.Second, func() bool {
		var resp *http.Response
		if resp, err = http.Get(u); err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, func() string { return fmt.Sprintf("%s: %v", u, err) })
}

// TestHealthToolAndCheckHealth: health_check = "tool" calls the configured
// tool with its arguments and counts a tool error as a failure; the
// health_threshold-th failure restarts the backend. CheckHealth runs a check
// on demand and reports its own result.
func TestHealthToolAndCheckHealth(t *testing.T) {
	fh := newFaultHost(t, "", `
[servers.good]
command = "@FIXTURE@"
health_check = "tool"
health_tool = "echo"
health_args = { text = "alive" }
health_interval = "1h"

[servers.bad]
command = "@FIXTURE@"
health_check = "tool"
health_tool = "fail"
health_args = { message = "disk full" }
health_interval = "1h"
health_threshold = 2
restart_backoff = { min = "10ms", max = "100ms" }

[servers.unchecked]
command = "@FIXTURE@"
health_check = "none"

[servers.later]
command = "@FIXTURE@"
start = "lazy"
`)
	ctx := context.Background()
	if st := statusOf(fh.Host, "good"); st.Health != host.HealthUnknown {
		t.Errorf("good before any check: health %q, want unknown", st.Health)
	}
	if err := fh.CheckHealth(ctx, "good"); err != nil {
		t.Fatalf("good: %v", err)
	}
	if st := statusOf(fh.Host, "good"); st.Health != host.HealthOK {
		t.Errorf("good after a check: health %q, want ok", st.Health)
	}

	pid := statusOf(fh.Host, "bad").Pid
	err := fh.CheckHealth(ctx, "bad")
	if err == nil || !strings.Contains(err.Error(), `health tool "fail" returned a tool error: disk full`) {
		t.Fatalf("bad, first check: %v", err)
	}
	if st := statusOf(fh.Host, "bad"); st.State != host.StateReady || st.Health != host.HealthFailing || st.HealthFailures != 1 || st.Restarts != 0 {
		t.Errorf("bad after one failed check (threshold 2): %+v", st)
	}
	if err := fh.CheckHealth(ctx, "bad"); err == nil {
		t.Fatal("bad, second check passed")
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		st := statusOf(fh.Host, "bad")
		return st.Restarts != 0 && st.State == host.StateReady
	}, func() string {
		return fmt.Sprintf("bad not restarted after health_threshold failed checks: %+v", statusOf(fh.Host, "bad"))
	})
	st := statusOf(fh.Host, "bad")
	if !errors.Is(st.Err, host.ErrUnhealthy) || st.Pid == pid || st.Health != host.HealthUnknown {
		t.Errorf("bad after its restart: %+v (err %v), want a new pid, ErrUnhealthy as last error, health unknown", st, st.Err)
	}
	waitGone(t, pid)

	if err := fh.CheckHealth(ctx, "unchecked"); err != nil {
		t.Errorf("health_check = none: %v, want nil", err)
	}
	if st := statusOf(fh.Host, "unchecked"); st.Health != host.HealthOff {
		t.Errorf("unchecked: health %q, want off", st.Health)
	}
	if err := fh.CheckHealth(ctx, "later"); !errors.Is(err, host.ErrBackendUnavailable) || !strings.Contains(err.Error(), "idle") {
		t.Errorf("lazy backend not started: %v, want ErrBackendUnavailable naming its state", err)
	}
	if err := fh.CheckHealth(ctx, "nope"); !errors.Is(err, host.ErrUnknownBackend) {
		t.Errorf("unknown backend: %v, want ErrUnknownBackend", err)
	}
}

// TestUnsubscribeAfterClose: the common `defer h.Subscribe(f)()` runs the
// unsubscribe after Close has stopped every subscriber; it must be a
// no-op, not a second close of the subscriber's channel (a panic).
func TestUnsubscribeAfterClose(t *testing.T) {
	h, err := host.New(context.Background(), &config.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	unsubscribe := h.Subscribe(func(host.Event) {})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	unsubscribe()
	unsubscribe()
}
