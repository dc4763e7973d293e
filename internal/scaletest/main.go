// Command scaletest is `make scale-test` (issue 25, item 8): toolhost serve
// replicas sharing one PostgreSQL behind HAProxy, under load while
// replicas are killed.
//
// It starts a private PostgreSQL (internal/pgtest: Debian's package, a
// cluster in a temporary directory, a Unix socket only), -replicas
// `toolhost serve` replicas with one configuration ([serve] stateless =
// true, [store] url = that database, bin/mcpfixture as a stdio backend,
// plugins/time.wasm as a Wasm plugin, one [serve.clients.NAME] token per
// client group), -session-replicas more with the same configuration but
// sessions (stateless = false), and HAProxy on loopback in front (a
// round-robin frontend for the stateless replicas, health checks on
// /readyz, retry-on conn-failure with redispatch; a frontend whose stick
// table keeps each Mcp-Session-Id on the replica that issued it). Then
// -clients go-sdk clients call tools through the proxy for -duration while
// a stateless replica is killed (SIGKILL) every -kill and restarted (and a
// session replica every second kill), and a few session clients call
// through the sticky frontend.
//
// It prints the calls made, answered, retried (a call in flight on a
// killed replica fails at the client, which retries it, up to twice while
// the replica may still be routed to: those are counted apart) and failed
// (must be 0), and with the features built
// (flags, until they are merged): -grants (exactly -grant-uses calls of a
// grant = "required" tool succeed across replicas), -rate (successes of a
// rate-limited client ≤ rate × duration + burst across replicas), -audit
// (rows in the audit table = calls, after the replicas flushed on SIGTERM;
// the records of killed replicas that were lost are reported). It exits 1
// when a figure is off, 2 on a setup error. Every child is killed at exit
// and the temporary directory removed (-keep keeps it; so does a failure,
// for its logs: the replicas', haproxy.log).
//
//	go run ./internal/scaletest                 # make scale-test
//	go run ./internal/scaletest -duration 20s -kill 5s -grants -rate -audit
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/pgtest"
)

var (
	duration        = flag.Duration("duration", 60*time.Second, "how long the clients call")
	killEvery       = flag.Duration("kill", 10*time.Second, "kill (SIGKILL) one stateless replica this often, and restart it")
	nClients        = flag.Int("clients", 50, "concurrent stateless go-sdk clients (all groups)")
	nSession        = flag.Int("session-clients", 4, "stateful (session) clients, through the sticky frontend")
	nReplicas       = flag.Int("replicas", 3, "stateless replicas")
	nSessReplicas   = flag.Int("session-replicas", 2, "replicas serving sessions (stateless = false)")
	callTimeout     = flag.Duration("call-timeout", 5*time.Second, "a client's bound on one call (a call cut by a kill ends at it)")
	withGrants      = flag.Bool("grants", true, "check grants across replicas ([tools.NAME] grant = \"required\", toolhost grant): needs the grants feature")
	grantUses       = flag.Int("grant-uses", 5, "with -grants: the grant's --uses")
	withRate        = flag.Bool("rate", true, "check rate limits across replicas ([serve.clients.NAME] rate): needs the rate feature")
	rateSpec        = flag.String("rate-limit", "120/m", "with -rate: the limited client's rate, N/UNIT [burst B] (burst default N)")
	withAudit       = flag.Bool("audit", true, "check audit rows = calls in the shared store: needs audit in the store")
	noAffinity      = flag.Bool("no-affinity", false, "leave the stick table out of the sessions frontend (the run must then fail: a check of the check)")
	keep            = flag.Bool("keep", false, "keep the temporary directory (configurations, logs)")
	toolhostBin     = flag.String("toolhost", "bin/toolhost", "the toolhost binary")
	fixtureBin      = flag.String("fixture", "bin/mcpfixture", "the fixture MCP server")
	pluginWasm      = flag.String("plugin", "plugins/time.wasm", "the Wasm plugin")
	haproxyBin      = flag.String("haproxy", "haproxy", "the HAProxy binary")
	statelessTools  = []string{"fixture__echo", "time__current_time"}
	grantedTool     = "fixture__add"
	statelessArgs   = map[string]map[string]any{"fixture__echo": {"text": "scale"}, "time__current_time": {"timezone": "UTC"}, "fixture__add": {"a": 1, "b": 2}}
	errSetup        = errors.New("setup")
	errFigureOff    = errors.New("figure off")
	sessionToolName = "fixture__echo"
)

func main() {
	flag.Parse()
	os.Exit(run())
}

// run is main; its defers stop every child and remove the directory.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{}
	defer e.cleanup()
	err := e.setup(ctx)
	if err == nil {
		err = e.load(ctx)
	}
	switch {
	case err == nil:
		fmt.Println("scale-test: PASS")
		return 0
	case errors.Is(err, errFigureOff):
		fmt.Printf("scale-test: FAIL: %v\n", err)
		fmt.Printf("scale-test: logs (replicas, haproxy.log) in %s (kept)\n", e.dir)
		*keep = true
		return 1
	default:
		fmt.Printf("scale-test: ERROR: %v\n", err)
		if e.dir != "" {
			fmt.Printf("scale-test: logs in %s (kept)\n", e.dir)
			*keep = true
		}
		return 2
	}
}

// env is the run's processes and files.
type env struct {
	dir      string
	pg       *pgtest.Server
	dbURL    string
	haproxy  *exec.Cmd
	hapDone  chan struct{}
	tokens   map[string]string // client group → token
	lbPort   int               // the stateless frontend
	sessPort int               // the sticky frontend
	mu       sync.Mutex
	replicas []*replica
}

// replica is one toolhost serve slot: a port and the current process.
type replica struct {
	name    string
	port    int
	config  string
	log     string
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	starts  int
	killed  int
	session bool
	genMu   sync.Mutex
	gens    []*gen // every process of the slot, in order
}

// gen is one process of a replica slot.
type gen struct {
	pid      int
	start    time.Time
	sig      syscall.Signal // how it was stopped (0: still running)
	answered int64          // calls it answered (audit check)
}

// answerLog counts the calls each replica process answered.
type answerLog struct {
	mu       sync.Mutex
	replicas []*replica
	unknown  int64 // answers the proxy did not name a replica for
}

var answers answerLog

// add counts an answer of the slot to a request sent at t: the slot's last
// process started by then (a killed process answers nothing sent after its
// kill, and its successor, started after it, gets requests only when the
// proxy's health check has seen it up).
func (a *answerLog) add(slot string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.replicas {
		if r.name != slot {
			continue
		}
		r.genMu.Lock()
		defer r.genMu.Unlock()
		for i := len(r.gens) - 1; i >= 0; i-- {
			if !r.gens[i].start.After(t) {
				r.gens[i].answered++
				return
			}
		}
	}
	a.unknown++
}

func (e *env) cleanup() {
	for _, r := range e.replicas {
		r.stop(syscall.SIGKILL, 10*time.Second)
	}
	if e.haproxy != nil {
		syscall.Kill(-e.haproxy.Process.Pid, syscall.SIGKILL)
		<-e.hapDone
	}
	if e.pg != nil {
		e.pg.Stop()
	}
	if e.dir != "" && !*keep {
		os.RemoveAll(e.dir)
	}
}

func (e *env) setup(ctx context.Context) error {
	for _, p := range []*string{toolhostBin, fixtureBin, pluginWasm} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w: %v (make build plugins)", errSetup, err)
		}
		*p = abs
	}
	if _, err := exec.LookPath(*haproxyBin); err != nil {
		// Debian's package puts it in /usr/sbin, not in a user's PATH.
		if _, serr := os.Stat("/usr/sbin/haproxy"); *haproxyBin != "haproxy" || serr != nil {
			return fmt.Errorf("%w: haproxy: %v (apt-get install haproxy)", errSetup, err)
		}
		*haproxyBin = "/usr/sbin/haproxy"
	}
	var err error
	if e.dir, err = os.MkdirTemp("", "scaletest-"); err != nil {
		return err
	}
	for _, d := range []string{"home", "state"} {
		if err := os.Mkdir(filepath.Join(e.dir, d), 0o700); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if e.pg, err = pgtest.Start(); err != nil {
		return fmt.Errorf("%w: %v", errSetup, err)
	}
	if e.dbURL, err = e.pg.CreateDB("scaletest"); err != nil {
		return fmt.Errorf("%w: %v", errSetup, err)
	}
	fmt.Printf("scale-test: PostgreSQL up in %v (Unix socket)\n", time.Since(t0).Round(time.Millisecond))
	e.tokens = map[string]string{}
	for _, g := range []string{"load", "granted", "limited", "session"} {
		e.tokens[g] = randHex(16)
	}
	stateless := e.writeConfig("stateless.toml", true)
	sessions := e.writeConfig("sessions.toml", false)
	ports, err := freePorts(*nReplicas + *nSessReplicas + 2)
	if err != nil {
		return err
	}
	e.lbPort, e.sessPort = ports[0], ports[1]
	for i := range *nReplicas + *nSessReplicas {
		r := &replica{port: ports[2+i], config: stateless}
		if i < *nReplicas {
			r.name = fmt.Sprintf("r%d", i+1)
		} else {
			r.name, r.config, r.session = fmt.Sprintf("s%d", i-*nReplicas+1), sessions, true
		}
		r.log = filepath.Join(e.dir, r.name+".log")
		e.replicas = append(e.replicas, r)
		answers.replicas = append(answers.replicas, r)
	}
	// The first replica alone first, so that it applies the migrations
	// (the others would wait on the advisory lock) and warms the caches.
	t0 = time.Now()
	if err := e.replicas[0].start(ctx, e.dir); err != nil {
		return err
	}
	errs := make(chan error, len(e.replicas))
	for _, r := range e.replicas[1:] {
		go func() { errs <- r.start(ctx, e.dir) }()
	}
	for range e.replicas[1:] {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Printf("scale-test: %d stateless + %d session replicas ready in %v\n", *nReplicas, *nSessReplicas, time.Since(t0).Round(time.Millisecond))
	if err := e.startHAProxy(ctx); err != nil {
		return err
	}
	fmt.Printf("scale-test: HAProxy on 127.0.0.1:%d (stateless) and 127.0.0.1:%d (sessions, sticky)\n", e.lbPort, e.sessPort)
	return nil
}

// writeConfig writes the replicas' configuration to the file name.
func (e *env) writeConfig(name string, stateless bool) string {
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(e.replicaConfig(stateless)), 0o600); err != nil {
		panic(err)
	}
	return p
}

// replicaConfig is the replicas' configuration; session replicas differ
// only in [serve] stateless.
func (e *env) replicaConfig(stateless bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# make scale-test: one toolhost serve replica of several sharing one PostgreSQL.
[host]
call_timeout = "10s"

[store]
url = %q

[serve]
stateless = %v
# Behind a proxy every client is the proxy's address.
max_connections = 2048
max_connections_per_peer = 2048

[serve.clients.load]
token = %q

[serve.clients.granted]
token = %q

[serve.clients.limited]
token = %q
`, e.dbURL, stateless, e.tokens["load"], e.tokens["granted"], e.tokens["limited"])
	if *withRate {
		fmt.Fprintf(&b, "rate = %q\n", *rateSpec)
	}
	fmt.Fprintf(&b, `
[serve.clients.session]
token = %q

[servers.fixture]
command = %q

[plugins.time]
path = %q
`, e.tokens["session"], *fixtureBin, *pluginWasm)
	if *withGrants {
		fmt.Fprintf(&b, "\n[tools.%s]\ngrant = \"required\"\n", grantedTool)
	}
	return b.String()
}

// start starts the replica's toolhost serve and waits until /readyz
// answers 200 (at most 60s).
func (r *replica) start(ctx context.Context, dir string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	r.starts++
	fmt.Fprintf(logf, "== scale-test: start %d\n", r.starts)
	cmd := exec.Command(*toolhostBin, "--config", r.config, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", r.port))
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %s: %v", errSetup, r.name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	r.cmd, r.done = cmd, done
	r.genMu.Lock()
	r.gens = append(r.gens, &gen{pid: cmd.Process.Pid, start: time.Now()})
	r.genMu.Unlock()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready(url) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%w: replica %s exited at start (%s): see %s", errSetup, r.name, cmd.ProcessState, r.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: replica %s not ready in 60s: see %s", errSetup, r.name, r.log)
		}
	}
}

func ready(url string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends sig to the replica's process group and waits up to wait for
// it to exit (then SIGKILL). It reports whether the process was running.
func (r *replica) stop(sig syscall.Signal, wait time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return false
	}
	r.genMu.Lock()
	r.gens[len(r.gens)-1].sig = sig
	r.genMu.Unlock()
	syscall.Kill(-r.cmd.Process.Pid, sig)
	select {
	case <-r.done:
	case <-time.After(wait):
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
	r.cmd = nil
	return true
}

// haproxyConfig is haproxy.cfg: a round-robin frontend for the stateless
// replicas, a sticky one for the session replicas.
func (e *env) haproxyConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# make scale-test: HAProxy in front of the toolhost serve replicas (loopback only).
global
    maxconn 4096
    log stdout format raw local0

defaults
    mode http
    # haproxy.log: the requests that did not end normally.
    log global
    option httplog
    option dontlog-normal
    timeout connect 1s
    timeout client  60s
    timeout server  60s
    timeout check   1s
    # A request that could not be sent to a replica (connection refused:
    # a killed replica not yet marked down) goes to another one. Only
    # connection failures: a call that reached a replica is never resent
    # by the proxy (the tool may have run).
    retries 3
    option redispatch 1
    retry-on conn-failure
    # HTTP/1.1 with a loopback Host: a replica on a loopback address
    # answers only those (DNS rebinding).
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
    default-server check inter 250ms fall 1 rise 2

frontend stateless
    bind 127.0.0.1:%d
    default_backend stateless

backend stateless
    balance roundrobin
    http-response set-header X-Toolhost-Replica %%s
`, e.lbPort)
	for _, r := range e.replicas {
		if !r.session {
			fmt.Fprintf(&b, "    server %s 127.0.0.1:%d\n", r.name, r.port)
		}
	}
	stick := `    stick-table type string len 128 size 100k expire 30m
    stick store-response res.hdr(Mcp-Session-Id)
    stick match req.hdr(Mcp-Session-Id)
`
	if *noAffinity {
		stick = ""
	}
	fmt.Fprintf(&b, `
frontend sessions
    bind 127.0.0.1:%d
    default_backend sessions

# Session affinity: a replica chooses the Mcp-Session-Id of a session it
# creates (in its initialize response), so a hash of the header cannot
# find it (balance hdr(Mcp-Session-Id) would send the session's next
# request to any replica): the stick table learns the id from the response
# and routes every later request carrying it to that replica.
backend sessions
    balance roundrobin
%s    http-response set-header X-Toolhost-Replica %%s
`, e.sessPort, stick)
	for _, r := range e.replicas {
		if r.session {
			fmt.Fprintf(&b, "    server %s 127.0.0.1:%d\n", r.name, r.port)
		}
	}
	return b.String()
}

// startHAProxy writes haproxy.cfg and runs HAProxy in the foreground.
func (e *env) startHAProxy(ctx context.Context) error {
	cfg := filepath.Join(e.dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(e.haproxyConfig()), 0o600); err != nil {
		return err
	}
	check := exec.Command(*haproxyBin, "-c", "-f", cfg)
	if out, err := check.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: haproxy -c: %v\n%s", errSetup, err, out)
	}
	logf, err := os.Create(filepath.Join(e.dir, "haproxy.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(*haproxyBin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: haproxy: %v", errSetup, err)
	}
	e.haproxy, e.hapDone = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(e.hapDone) }()
	for _, port := range []int{e.lbPort, e.sessPort} {
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
		deadline := time.Now().Add(30 * time.Second)
		for !ready(url) {
			select {
			case <-e.hapDone:
				return fmt.Errorf("%w: haproxy exited: see %s", errSetup, filepath.Join(e.dir, "haproxy.log"))
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: haproxy not serving in 30s", errSetup)
			}
		}
	}
	return nil
}

// killLog is when replicas were killed, to tell a call cut by a kill
// (in flight when one was killed) from one cut for no reason. A kill lasts
// from the SIGKILL until its exit is seen: a dying process (tens of ms on
// a busy machine) still has its sockets, and takes requests it never
// answers.
type killLog struct {
	mu      sync.Mutex
	from    []time.Time
	to      []time.Time
	session []bool // kill i was of a session replica
}

var kills killLog

// begin records a kill starting now (before the signal, so that a call
// that sees its effect finds it), until end(i).
func (k *killLog) begin(session bool) (i int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.from = append(k.from, time.Now())
	k.to = append(k.to, time.Now().Add(time.Hour))
	k.session = append(k.session, session)
	return len(k.from) - 1
}

// end records that kill i's process has exited. The kill's effects last
// until HAProxy's health check has seen it (inter 250ms, timeout check 1s:
// until then a request may be sent on an idle connection to the dead
// replica, and the proxy does not resend it: the request may have reached
// the server), so the kill counts until then.
func (k *killLog) end(i int) {
	k.mu.Lock()
	k.to[i] = time.Now().Add(killDetect)
	k.mu.Unlock()
}

// killDetect is how long after a replica's exit HAProxy may still send it
// a request: a health check interval and its timeout.
const killDetect = 1250 * time.Millisecond

// during reports whether a replica of the kind was killed between t0 and
// t1.
func (k *killLog) during(t0, t1 time.Time, session bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.from {
		if k.session[i] == session && !k.from[i].After(t1) && !k.to[i].Before(t0) {
			return true
		}
	}
	return false
}

// counts are one client group's figures.
type counts struct {
	attempts  atomic.Int64 // requests sent (retries included)
	ok        atomic.Int64 // calls that succeeded at the first attempt
	retriedOK atomic.Int64 // calls that failed at the client (in flight on a killed replica) and succeeded when retried (callAttempts)
	failed    atomic.Int64 // calls that failed even when retried, or with an unexpected result
	refused   atomic.Int64 // isError results the check expects (grant required, rate limited)
	cut       atomic.Int64 // attempts that failed at the client (their fate at the replica is unknown)
	cutNoKill atomic.Int64 // of those, attempts during which no replica was killed
	reinit    atomic.Int64 // sessions re-initialized
	mu        sync.Mutex
	samples   []string
	lat       []time.Duration // of the calls that succeeded at the first attempt
}

func (c *counts) latency(d time.Duration) {
	c.mu.Lock()
	c.lat = append(c.lat, d)
	c.mu.Unlock()
}

// quantiles returns the p50, p99 and max of the recorded latencies.
func (c *counts) quantiles() (p50, p99, top time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(c.lat)
	q := func(f float64) time.Duration { return c.lat[min(len(c.lat)-1, int(f*float64(len(c.lat))))] }
	return q(0.5), q(0.99), c.lat[len(c.lat)-1]
}

func (c *counts) sample(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.samples) < 8 {
		c.samples = append(c.samples, s)
	}
}

// bearer adds the client's token, and records the replica HAProxy says
// answered (X-Toolhost-Replica).
type bearer struct {
	tok  string
	base http.RoundTripper
	last *atomic.Value // string: the X-Toolhost-Replica of the last response
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	resp, err := b.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		b.last.Store(resp.Header.Get("X-Toolhost-Replica"))
	}
	return resp, err
}

// client is one go-sdk client of one group.
type client struct {
	url     string
	session bool // keep the standalone SSE stream (a session's)
	tok     string
	hc      *http.Client
	cs      *mcp.ClientSession
	since   time.Time // when cs was connected
	last    atomic.Value
}

// answered records that the call just made was answered (by the replica
// the proxy named), for the audit check.
func (c *client) answered(sent time.Time) {
	slot, _ := c.last.Load().(string)
	answers.add(slot, sent)
}

func newClient(url, tok string, session bool, tr http.RoundTripper) *client {
	c := &client{url: url, tok: tok, session: session}
	c.hc = &http.Client{Transport: bearer{tok, tr, &c.last}}
	return c
}

func (c *client) connect(ctx context.Context) error {
	if c.cs != nil {
		c.cs.Close()
		c.cs = nil
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "scaletest", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, *callTimeout)
	defer cancel()
	cs, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: c.hc, MaxRetries: -1, DisableStandaloneSSE: !c.session}, nil)
	if err != nil {
		return err
	}
	c.cs, c.since = cs, time.Now()
	return nil
}

func (c *client) close() {
	if c.cs != nil {
		c.cs.Close()
	}
}

// call makes one call bounded by -call-timeout.
func (c *client) call(tool string) (*mcp.CallToolResult, error) {
	if c.cs == nil {
		if err := c.connect(context.Background()); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *callTimeout)
	defer cancel()
	return c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: statelessArgs[tool]})
}

// expected reports whether the text of an isError result has one of the
// |-separated words of expect (case aside).
func expected(text, expect string) bool {
	text = strings.ToLower(text)
	for _, w := range strings.Split(expect, "|") {
		if w != "" && strings.Contains(text, w) {
			return true
		}
	}
	return false
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// callAttempts bounds a stateless call's attempts: the first and up to two
// retries, each after a cut that overlapped a kill. A retry is sent while
// HAProxy may still route to the killed replica (its health check has not
// seen the kill yet, killDetect, or later on a loaded machine), and lands
// there again one time in three: one retry was not always enough (a CI run
// at load 10 had one call cut twice, both times during r1's kill).
const callAttempts = 3

// callRetry makes a call and, when it fails at the client (a transport
// error or no answer in time: in flight on a killed replica), reconnects
// and retries it, at most callAttempts attempts in all and only while
// every cut overlaps a kill. expect says which isError texts are refusals
// the group expects.
func (c *client) callRetry(tool string, n *counts, expect string) (success bool) {
	for attempt := 0; attempt < callAttempts; attempt++ {
		n.attempts.Add(1)
		t0 := time.Now()
		res, err := c.call(tool)
		if err == nil {
			c.answered(t0)
		}
		switch {
		case err == nil && !res.IsError:
			if attempt == 0 {
				n.ok.Add(1)
				n.latency(time.Since(t0))
			} else {
				n.retriedOK.Add(1)
			}
			return true
		case err == nil && expected(text(res), expect):
			n.refused.Add(1)
			return false
		case err != nil && expect == "rate limited" && strings.Contains(err.Error(), "Too Many Requests"):
			// (An HTTP 429 instead of an isError result.)
			n.refused.Add(1)
			return false
		case err == nil:
			n.failed.Add(1)
			n.sample(tool + ": isError: " + text(res))
			return false
		}
		n.cut.Add(1)
		killed := kills.during(t0, time.Now(), false)
		if !killed {
			n.cutNoKill.Add(1)
			n.sample(fmt.Sprintf("%s: cut with no kill (%s to %s): %v", tool, t0.Format("15:04:05.000"), time.Now().Format("15:04:05.000"), err))
		}
		if attempt == callAttempts-1 || (attempt > 0 && !killed) {
			n.failed.Add(1)
			n.sample(fmt.Sprintf("%s: retried %d times: %v", tool, attempt, err))
			return false
		}
		// The session may be broken (the go-sdk ends a connection on some
		// errors): a new one (stateless: no state is lost).
		if cerr := c.connect(context.Background()); cerr != nil {
			n.attempts.Add(1)
			n.cut.Add(1)
			n.failed.Add(1)
			n.sample(tool + ": reconnect: " + cerr.Error())
			return false
		}
		n.reinit.Add(1)
	}
	return false
}

// load runs the clients and the killer, then checks the figures.
func (e *env) load(ctx context.Context) error {
	tr := &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	lb := fmt.Sprintf("http://127.0.0.1:%d/mcp", e.lbPort)
	if *withGrants {
		out, err := exec.CommandContext(ctx, *toolhostBin, "--config", e.replicas[0].config, "grant", "granted", grantedTool,
			"--ttl", "1m", "--uses", strconv.Itoa(*grantUses)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: toolhost grant: %v\n%s", errSetup, err, out)
		}
		fmt.Printf("scale-test: toolhost grant granted %s --uses %d: %s", grantedTool, *grantUses, out)
	}
	groups := map[string]*counts{"load": {}, "granted": {}, "limited": {}, "session": {}}
	nGranted, nLimited := 0, 0
	if *withGrants {
		nGranted = 2
	}
	if *withRate {
		nLimited = 4
	}
	nLoad := *nClients - nGranted - nLimited
	var clients []*client
	var groupOf []string
	add := func(url, group string, n int) error {
		for range n {
			c := newClient(url, e.tokens[group], group == "session", tr)
			if err := c.connect(ctx); err != nil {
				return fmt.Errorf("%w: connect %s client: %v", errSetup, group, err)
			}
			clients = append(clients, c)
			groupOf = append(groupOf, group)
		}
		return nil
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	sessURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", e.sessPort)
	for _, g := range []struct {
		url, group string
		n          int
	}{{lb, "load", nLoad}, {lb, "granted", nGranted}, {lb, "limited", nLimited}, {sessURL, "session", *nSession}} {
		if err := add(g.url, g.group, g.n); err != nil {
			return err
		}
	}
	for i, c := range clients {
		if groupOf[i] == "session" && c.cs.ID() == "" {
			return fmt.Errorf("%w: a session client got no Mcp-Session-Id: the session replicas serve stateless", errSetup)
		}
	}
	fmt.Printf("scale-test: %d stateless clients (load %d, granted %d, limited %d) and %d session clients for %v, a replica killed every %v (load average %s)\n",
		*nClients, nLoad, nGranted, nLimited, *nSession, *duration, *killEvery, loadavg())

	lctx, stopLoad := context.WithTimeout(ctx, *duration)
	defer stopLoad()
	t0 := time.Now()
	var wg sync.WaitGroup
	var sessLost atomic.Int64 // session calls that found their session gone
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := groups[groupOf[i]]
			for k := 0; lctx.Err() == nil; k++ {
				switch groupOf[i] {
				case "load":
					c.callRetry(statelessTools[(i+k)%len(statelessTools)], n, "")
				case "granted":
					c.callRetry(grantedTool, n, "grant required|needs a grant")
					pause(lctx, 100*time.Millisecond)
				case "limited":
					c.callRetry("fixture__echo", n, "rate limited")
					pause(lctx, 20*time.Millisecond)
				case "session":
					// A session lives on one replica: its death ends the
					// session, and the client initializes a new one (through
					// the sticky frontend, on a live replica).
					n.attempts.Add(1)
					t0 := time.Now()
					res, err := c.call(sessionToolName)
					if err == nil {
						c.answered(t0)
					}
					switch {
					case err == nil && !res.IsError:
						n.ok.Add(1)
						n.latency(time.Since(t0))
					case err == nil:
						n.failed.Add(1)
						n.sample("session: isError: " + text(res))
					default:
						n.cut.Add(1)
						// The session ended when its replica was killed,
						// which may be before this call: any time since
						// it was created.
						if !kills.during(c.since, time.Now(), true) {
							n.cutNoKill.Add(1)
							n.sample("session: cut with no kill: " + err.Error())
						}
						sessLost.Add(1)
						if c.connect(lctx) == nil {
							n.reinit.Add(1)
						}
						n.attempts.Add(1)
						t1 := time.Now()
						res, err := c.call(sessionToolName)
						if err == nil {
							c.answered(t1)
						}
						if err == nil && !res.IsError {
							n.retriedOK.Add(1)
						} else if lctx.Err() == nil {
							n.failed.Add(1)
							n.sample(fmt.Sprintf("session: after re-initializing: %v", err))
						}
					}
					pause(lctx, 50*time.Millisecond)
				}
			}
		}()
	}

	// The killer: every -kill, SIGKILL a stateless replica (in turn) and
	// start it again; every second time also a session replica.
	nKills, sessKills := 0, 0
	var restartErr error
	var restarts sync.WaitGroup
	tick := time.NewTicker(*killEvery)
	stateless, sess := e.byKind(false), e.byKind(true)
	for done := false; !done; {
		select {
		case <-lctx.Done():
			done = true
		case <-tick.C:
			if time.Until(t0.Add(*duration)) < time.Second {
				continue // no kill in the last second: nothing would see it
			}
			victims := []*replica{stateless[nKills%len(stateless)]}
			if nKills%2 == 1 && len(sess) > 0 {
				victims = append(victims, sess[sessKills%len(sess)])
				sessKills++
			}
			nKills++
			for _, r := range victims {
				k := kills.begin(r.session)
				r.stop(syscall.SIGKILL, 10*time.Second)
				kills.end(k)
				r.killed++
				fmt.Printf("scale-test: %5.1fs killed %s (%s)\n", time.Since(t0).Seconds(), r.name, time.Now().Format("15:04:05.000"))
				restarts.Add(1)
				go func() {
					defer restarts.Done()
					if err := r.start(lctx, e.dir); err != nil && lctx.Err() == nil {
						e.mu.Lock()
						restartErr = err
						e.mu.Unlock()
					}
				}()
			}
		}
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(t0)
	for _, c := range clients {
		c.close()
	}
	// The last restarts end (a start sees the load's end and stops
	// waiting); then every replica flushes its queue on SIGTERM.
	restarts.Wait()
	t1 := time.Now()
	for _, r := range e.replicas {
		r.stop(syscall.SIGTERM, 30*time.Second)
	}
	fmt.Printf("scale-test: replicas stopped (SIGTERM) in %v; load average %s\n", time.Since(t1).Round(time.Millisecond), loadavg())

	// The figures.
	var problems []string
	off := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	e.mu.Lock()
	if restartErr != nil {
		off("a restart failed: %v", restartErr)
	}
	e.mu.Unlock()
	total := func(f func(*counts) int64) (s int64) {
		for _, n := range groups {
			s += f(n)
		}
		return s
	}
	made := total(func(n *counts) int64 { return n.ok.Load() + n.retriedOK.Load() + n.failed.Load() + n.refused.Load() })
	fmt.Printf("scale-test: %d kills of stateless replicas and %d of session replicas in %v\n", nKills, sessKills, elapsed.Round(time.Millisecond))
	fmt.Printf("scale-test: calls made %d (%.0f/s), requests sent %d\n", made, float64(made)/elapsed.Seconds(), total(func(n *counts) int64 { return n.attempts.Load() }))
	for _, g := range []string{"load", "granted", "limited", "session"} {
		n := groups[g]
		if n.attempts.Load() == 0 {
			continue
		}
		p50, p99, top := n.quantiles()
		fmt.Printf("scale-test:   %-8s ok %d, retried and ok %d, refused as expected %d, failed %d, cut at the client %d (%d with no kill), re-initialized %d; latency p50 %v p99 %v max %v\n",
			g, n.ok.Load(), n.retriedOK.Load(), n.refused.Load(), n.failed.Load(), n.cut.Load(), n.cutNoKill.Load(), n.reinit.Load(),
			p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), top.Round(10*time.Microsecond))
		for _, s := range n.samples {
			fmt.Printf("scale-test:     %s\n", s)
		}
	}
	failed := total(func(n *counts) int64 { return n.failed.Load() })
	retried := total(func(n *counts) int64 { return n.retriedOK.Load() })
	fmt.Printf("scale-test: calls failed %d; calls in flight on a killed replica, retried by the client and ok: %d\n", failed, retried)
	if failed != 0 {
		off("%d calls failed", failed)
	}
	if c := total(func(n *counts) int64 { return n.cutNoKill.Load() }); c != 0 {
		off("%d attempts were cut while no replica was killed", c)
	}
	if made == 0 || groups["load"].ok.Load() == 0 {
		off("no call succeeded")
	}
	// A killed session replica ends the sessions on it, once each.
	if lost := sessLost.Load(); lost > int64(sessKills**nSession) {
		off("%d session calls found their session gone, more than the %d sessions the %d kills could end: affinity does not hold", lost, sessKills**nSession, sessKills)
	} else {
		fmt.Printf("scale-test: session affinity: %d session calls, %d found their session ended by a kill (at most %d) and re-initialized\n",
			groups["session"].attempts.Load(), lost, sessKills**nSession)
	}
	if *withGrants {
		n := groups["granted"]
		got := n.ok.Load() + n.retriedOK.Load()
		fmt.Printf("scale-test: grants: %d calls of %s under a grant of %d uses, %d succeeded across %d replicas, %d refused\n",
			n.attempts.Load(), grantedTool, *grantUses, got, *nReplicas, n.refused.Load())
		// A call cut by a kill may have used the grant on the killed
		// replica without its answer arriving: then fewer succeed.
		if cut := n.cut.Load(); got > int64(*grantUses) || got < int64(*grantUses)-cut {
			off("grants: %d calls succeeded, want exactly %d (%d cut by kills)", got, *grantUses, cut)
		}
	}
	if *withRate {
		n := groups["limited"]
		got := n.ok.Load() + n.retriedOK.Load()
		count, per, burst, err := parseRate(*rateSpec)
		if err != nil {
			return fmt.Errorf("%w: -rate-limit: %v", errSetup, err)
		}
		bound := int64(float64(count)*elapsed.Seconds()/per.Seconds()) + int64(burst)
		// A replica whose store did not answer within its bound applies
		// the limit on its own until it does (README, "Rate limits"): each
		// such outage may let up to one more burst through.
		outages := e.rateOutages()
		extra := ""
		if outages > 0 {
			bound += int64(outages) * int64(burst)
			extra = fmt.Sprintf(", +%d×burst for %d store outages in which a replica applied the limit on its own", outages, outages)
		}
		fmt.Printf("scale-test: rate limits: client limited (%s, burst %d): %d calls, %d succeeded across %d replicas (bound %d%s), %d refused\n",
			*rateSpec, burst, n.attempts.Load(), got, *nReplicas, bound, extra, n.refused.Load())
		if got > bound {
			off("rate limits: %d calls succeeded, more than %d", got, bound)
		}
		if n.refused.Load() == 0 {
			off("rate limits: no call of the limited client was refused")
		}
	}
	if *withAudit {
		if err := e.checkAudit(groups, nKills+sessKills, off); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errFigureOff, strings.Join(problems, "; "))
	}
	return nil
}

// checkAudit compares the audit rows of tools/call in the shared store
// with the calls, replica process by replica process (the row's replica is
// hostname:pid; the proxy names the replica that answered each call): a
// process stopped by SIGTERM has flushed a row for every call it answered;
// a killed one lost at most the records still queued (reported). No process
// may have more rows than the calls it answered and the attempts cut by
// kills.
// rateOutages counts the replicas' "rate limits: the store did not answer"
// (and "could not be opened") warnings in their logs: the times a replica
// fell back to its own buckets (logged once per outage).
func (e *env) rateOutages() int {
	logs, _ := filepath.Glob(filepath.Join(e.dir, "*.log"))
	n := 0
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		n += strings.Count(string(b), "rate limits: the store did not answer") + strings.Count(string(b), "rate limits: the store could not be opened")
	}
	return n
}

func (e *env) checkAudit(groups map[string]*counts, kills int, off func(string, ...any)) error {
	db, err := sql.Open("pgx", e.dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	tools := append([]string{grantedTool}, statelessTools...)
	rs, err := db.Query(`SELECT replica, count(*) FROM audit WHERE op = '' AND tool IN ($1, $2, $3) GROUP BY replica`, tools[0], tools[1], tools[2])
	if err != nil {
		return fmt.Errorf("%w: count audit rows: %v", errSetup, err)
	}
	defer rs.Close()
	rowsOf := map[int]int64{}
	var rows int64
	for rs.Next() {
		var replica string
		var n int64
		if err := rs.Scan(&replica, &n); err != nil {
			return fmt.Errorf("%w: count audit rows: %v", errSetup, err)
		}
		rows += n
		pid, _ := strconv.Atoi(replica[strings.LastIndex(replica, ":")+1:])
		rowsOf[pid] += n
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("%w: count audit rows: %v", errSetup, err)
	}
	answered := answers.unknown
	var cut int64
	for _, n := range groups {
		cut += n.cut.Load()
	}
	for _, r := range e.replicas {
		for _, g := range r.gens {
			answered += g.answered
		}
	}
	var lostKilled, lostTerm, extra int64
	var detail []string
	for _, r := range e.replicas {
		for _, g := range r.gens {
			got := rowsOf[g.pid]
			delete(rowsOf, g.pid)
			d := g.answered - got
			switch {
			case d > 0 && g.sig == syscall.SIGKILL:
				lostKilled += d
			case d > 0:
				lostTerm += d
			case d < 0:
				extra += -d
			}
			if d != 0 {
				detail = append(detail, fmt.Sprintf("%s pid %d (%v): %d answered, %d rows", r.name, g.pid, g.sig, g.answered, got))
			}
		}
	}
	var strays int64
	for _, n := range rowsOf {
		strays += n
	}
	fmt.Printf("scale-test: audit: %d rows of tools/call in the shared store for %d calls answered (%d answers the proxy did not name a replica for) and %d attempts cut by kills\n",
		rows, answered, answers.unknown, cut)
	fmt.Printf("scale-test: audit: records lost by killed replicas %d (in %d kills), by replicas stopped with SIGTERM %d; rows beyond the answered calls %d (cut attempts the replica finished), rows of no replica process of this run %d\n",
		lostKilled, kills, lostTerm, extra, strays)
	for i, d := range detail {
		if i == 12 {
			fmt.Printf("scale-test:     ... %d more\n", len(detail)-i)
			break
		}
		fmt.Printf("scale-test:     %s\n", d)
	}
	switch {
	case lostTerm > 0:
		off("audit: %d records of replicas stopped with SIGTERM are missing", lostTerm)
	case extra > cut:
		off("audit: %d rows more than the calls answered, beyond the %d cut attempts", extra, cut)
	case strays > 0:
		off("audit: %d rows of processes that are not this run's replicas", strays)
	case answers.unknown > 0:
		off("audit: %d answers without X-Toolhost-Replica", answers.unknown)
	}
	return nil
}

func (e *env) byKind(session bool) []*replica {
	var rs []*replica
	for _, r := range e.replicas {
		if r.session == session {
			rs = append(rs, r)
		}
	}
	return rs
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// parseRate parses "N/UNIT" or "N/UNIT burst B" (config/rate.go's syntax)
// into N, the unit and the burst (default N).
func parseRate(s string) (n int, per time.Duration, burst int, err error) {
	f := strings.Fields(s)
	switch {
	case len(f) == 1:
	case len(f) == 3 && f[1] == "burst":
		if burst, err = strconv.Atoi(f[2]); err != nil || burst <= 0 {
			return 0, 0, 0, fmt.Errorf("%q: the burst is not a positive number", s)
		}
	default:
		return 0, 0, 0, fmt.Errorf("%q is not N/UNIT [burst B]", s)
	}
	n, per, err = parsePer(f[0])
	if burst == 0 {
		burst = n
	}
	return n, per, burst, err
}

func parsePer(s string) (int, time.Duration, error) {
	num, unit, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n <= 0 {
		return 0, 0, fmt.Errorf("%q is not COUNT/UNIT", s)
	}
	switch unit {
	case "s":
		return n, time.Second, nil
	case "m":
		return n, time.Minute, nil
	case "h":
		return n, time.Hour, nil
	}
	return 0, 0, fmt.Errorf("%q: the unit must be s, m or h", s)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute averages and the CPUs.
func loadavg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	fs := strings.Fields(line)
	if len(fs) < 3 {
		return "unknown"
	}
	return fmt.Sprintf("%s %s %s on %d CPUs", fs[0], fs[1], fs[2], runtime.NumCPU())
}
