package gateway_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
	"github.com/toolhost/toolhost/internal/wasmbuild"
)

// opsToken is the admin token of the browser test's configuration.
const opsToken = "ops-token-0123456789abcdef"

// chromium is Debian's browser, which CI installs (.ci/run).
const chromium = "/usr/bin/chromium"

// needChromium skips t without chromium, except under CI (CI=true), where
// its absence is a failure.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no %s: %v", chromium, err)
		}
		t.Skipf("no %s (apt-get install chromium): %v", chromium, err)
	}
}

// hostileText is what htmlserver (testdata/htmlserver) hides in its strings.
const hostileText = `<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">javascript:alert(3)</a>`

// TestDashboardBrowser drives the dashboard in a real headless Chromium:
// it logs in with an admin token through the form (the cookie is not
// readable from script); the page shows every backend of the configuration (stdio servers, a Wasm
// plugin, one that cannot start); hostile strings from a server (a tool
// description, serverInfo, a last error, a tool error in the live audit
// table) show as text, inject no element and fire no alert; killing a
// backend's process changes its row's state in the page within 2 s,
// without a reload (Server-Sent Events); an admin's restart button gets
// past the authentication and cross-origin protection. A screenshot is written to
// bin/dashboard.png.
func TestDashboardBrowser(t *testing.T) {
	needChromium(t)
	htmlserver := testutil.GoBinary(t, "./host/gateway/testdata/htmlserver")
	wasm := wasmbuild.Build(t, filepath.Join(testutil.Root(), "testdata", "plugins"), "./pdkecho")
	f := start(t, fmt.Sprintf(`
[servers.fx]
command = "@FIXTURE@"
startup_timeout = "5m"
restart_backoff = { min = "1m", max = "1m" }

[servers.html]
command = %q
startup_timeout = "5m"

[servers.broken]
command = "/nonexistent/<script>alert(5)</script>javascript:alert(6)"
max_restarts = 0

[plugins.echo]
path = %q
startup_timeout = "5m"

[serve.clients.ops]
token = %q
admin = true
`, htmlserver, wasm, opsToken))
	u := base(t, f)
	var names []string
	pid := 0
	for _, st := range f.h.Status() {
		names = append(names, st.Name)
		if st.Name == "fx" {
			pid = st.Pid
		}
	}
	if pid == 0 {
		t.Fatalf("fx has no pid: %+v", f.h.Status())
	}

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1500, 1100))...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, waitTimeout)
	defer cancelT()

	var alerts, exceptions atomic.Int32
	var lastException atomic.Value
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			alerts.Add(1)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}) //nolint:errcheck // unblocks the page; the count fails the test
		case *runtime.EventExceptionThrown:
			exceptions.Add(1)
			lastException.Store(fmt.Sprintf("%+v", ev.ExceptionDetails))
		}
	}); err != nil {
		t.Fatal(err)
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// The login form, then the page, live (its EventSource has the cookie).
	if err := chromedp.Do(ctx, chromedp.Navigate(u+"/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), opsToken), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("#live.on"))); err != nil {
		t.Fatal(err)
	}
	if eval(`document.cookie`) != "" {
		t.Error("the token cookie is readable from script (want HttpOnly)")
	}

	shown := strings.Split(eval(`Array.from(document.querySelectorAll('#backends tbody tr')).map(tr => tr.dataset.backend).join(',')`), ",")
	slices.Sort(shown)
	if !slices.Equal(shown, names) {
		t.Fatalf("the page shows backends %v, the configuration has %v", shown, names)
	}
	if d := eval(`document.querySelector('#tools tr[data-tool="html__xss"] td.description').textContent`); !strings.Contains(d, hostileText) {
		t.Errorf("the hostile description is not shown as text: %q", d)
	}
	if e := eval(`document.querySelector('#backends tr[data-backend="broken"] td.last_error').textContent`); !strings.Contains(e, "<script>alert(5)</script>javascript:alert(6)") {
		t.Errorf("the hostile last error is not shown as text: %q", e)
	}

	// A call whose tool error carries the hostile text arrives in the live
	// audit table (built by dashboard.js).
	if _, err := f.h.CallTool(ctx, "html__xss", nil); err != nil {
		t.Fatal(err)
	}
	var audit string
	testutil.Eventually(t, waitTimeout, func() bool {
		audit = eval(`(document.querySelector('#audit tbody tr') || {textContent: ''}).textContent`)
		return strings.Contains(audit, "html__xss")
	}, "no live audit row for html__xss")

	if c := eval(`document.querySelector('#tools tr[data-tool="html__xss"] td.calls').textContent + '/' + document.querySelector('#tools tr[data-tool="html__xss"] td.errors').textContent`); c != "1/1" {
		t.Errorf("html__xss calls/errors in the page = %s, want 1/1 (counted live)", c)
	}

	injected := func() string {
		return eval(`[document.querySelectorAll('script').length, document.querySelectorAll('img, iframe, object, embed').length,
			document.querySelectorAll('a[href^="javascript:" i], [onerror], [onclick], [onload]').length].join(',')`)
	}
	if got := injected(); got != "1,0,0" {
		t.Errorf("scripts, embedded elements, javascript:/handler attributes = %s, want 1,0,0 (only dashboard.js)", got)
	}

	// Kill fx's process: its row leaves "ready" within 2 s, live.
	state := `document.querySelector('#backends tr[data-backend="fx"] td.state').textContent`
	if s := eval(state); s != string(host.StateReady) {
		t.Fatalf("fx is %q before the kill, want ready", s)
	}
	eval(`document.body.dataset.loaded = 'once'; ''`) // gone if the page reloads
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	testutil.Eventually(t, waitTimeout, func() bool { return eval(state) != string(host.StateReady) }, "fx's row still says ready")
	if took := time.Since(killed); took > 2*time.Second {
		t.Errorf("the state change took %v to reach the page, want at most 2s", took)
	}
	if eval(`document.body.dataset.loaded || ''`) != "once" {
		t.Error("the page was reloaded")
	}
	t.Logf("fx: %s in the page %v after the kill", eval(state), time.Since(killed).Round(time.Millisecond))

	// An admin's button: a same-origin POST with the cookie passes the
	// authentication and the cross-origin protection (the endpoint's
	// answer is the REST API's).
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#backends tr[data-backend="html"] button[data-action="restart"]`))); err != nil {
		t.Fatal(err)
	}
	var notice string
	testutil.Eventually(t, waitTimeout, func() bool {
		notice = eval(`document.getElementById('notice').textContent`)
		return notice != ""
	}, "no answer to the restart button")
	if !strings.HasPrefix(notice, "restart html: ") || strings.Contains(notice, "cross-origin") || strings.Contains(notice, "bearer token") || strings.Contains(notice, "admin") {
		t.Errorf("the restart button's answer: %q (refused by the authentication or the cross-origin protection?)", notice)
	}
	t.Logf("restart button: %s", notice)

	// Disable, then enable, a backend from its row: the row follows over
	// SSE, and offers only the action that applies.
	display := func(action string) string {
		return eval(`getComputedStyle(document.querySelector('#backends tr[data-backend="echo"] button[data-action="` + action + `"]')).display === 'none' ? 'hidden' : 'shown'`)
	}
	echoState := `document.querySelector('#backends tr[data-backend="echo"] td.state').textContent`
	if display("enable") != "hidden" || display("disable") != "shown" {
		t.Errorf("a ready backend's row: enable %s, disable %s; want only disable", display("enable"), display("disable"))
	}
	for _, step := range []struct{ action, state, hidden string }{{"disable", "disabled", "disable"}, {"enable", "ready", "enable"}} {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#backends tr[data-backend="echo"] button[data-action="`+step.action+`"]`))); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, waitTimeout, func() bool {
			return eval(echoState) == step.state && display(step.hidden) == "hidden"
		}, "echo's row after "+step.action+": "+eval(echoState))
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(testutil.Root(), "bin", "dashboard.png")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)

	if got := injected(); got != "1,0,0" {
		t.Errorf("after the live updates: scripts, embedded elements, javascript:/handler attributes = %s, want 1,0,0", got)
	}
	if n := alerts.Load(); n > 0 {
		t.Errorf("%d alert dialogs opened: hostile text ran as script", n)
	}
	if n := exceptions.Load(); n > 0 {
		t.Errorf("%d uncaught exceptions in the page, the last: %v", n, lastException.Load())
	}
	if err := chromedp.Cancel(ctx); err != nil {
		t.Log(err)
	}
}
