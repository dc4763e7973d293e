package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// attack is one way a hostile client hurts the others (issue 21): it runs
// against the gateway at base (http://127.0.0.1:PORT, the attacker's peer
// address) until ctx is done, and returns once every goroutine and
// connection it made is gone. token is a valid client token, for attacks
// made by an authenticated client. Errors the gateway's defences cause
// (refused or reset connections) are the attack's lot, not failures;
// attacks run outside the benchmark's goroutine, so they report with
// tb.Log/tb.Error, never tb.Fatal.
type attack func(ctx context.Context, tb testing.TB, base, token string)

// attacks are BenchmarkUnderAttack's sub-benchmarks, "none" the idle run
// the others are measured against. Attackers are paced (each resends at
// most every attackPause): a flood at the machine's full speed measures the
// 2 shared cores, not the gateway; a SYN flood is the kernel's business.
var attacks = []struct {
	name string
	run  attack
}{
	{"none", nil},
	{"slowbody", attackSlowBody},
	{"slowbodytoken", attackSlowBodyWithToken},
	{"connflood", attackConnFlood},
	{"connrate", attackConnRate},
	{"connrate-proc", inChild("connrate")},
}

// inChild runs the attack of attacks named name in a child process (this
// test binary, TestAttacker): its own CPU then competes with the gateway
// as another process's would, not inside the gateway's Go scheduler.
func inChild(name string) attack {
	return func(ctx context.Context, tb testing.TB, base, token string) {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAttacker$")
		cmd.Env = append(os.Environ(), "TOOLHOST_ATTACK="+name, "TOOLHOST_ATTACK_BASE="+base, "TOOLHOST_ATTACK_TOKEN="+token)
		cmd.Stdin, _ = os.Open(os.DevNull)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 10 * time.Second
		if out, err := cmd.CombinedOutput(); ctx.Err() == nil {
			tb.Errorf("attacker %s ended before the benchmark: %v\n%s", name, err, out)
		}
	}
}

// TestAttacker is inChild's child: it runs the attack TOOLHOST_ATTACK
// until SIGINT. Without that variable it does nothing.
func TestAttacker(t *testing.T) {
	name := os.Getenv("TOOLHOST_ATTACK")
	if name == "" {
		t.Skip("the child process of inChild")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, a := range attacks {
		if a.name == name && a.run != nil {
			a.run(ctx, t, os.Getenv("TOOLHOST_ATTACK_BASE"), os.Getenv("TOOLHOST_ATTACK_TOKEN"))
			return
		}
	}
	t.Fatalf("no attack %q", name)
}

const attackPause = 100 * time.Millisecond

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// attackers runs n copies of one until ctx is done, each again after
// every pause once the previous run ended.
func attackers(ctx context.Context, n int, every time.Duration, one func(ctx context.Context, i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				one(ctx, i)
				pause(ctx, every)
			}
		})
	}
	wg.Wait()
}

// hold dials addr, writes req and reads until the gateway closes the
// connection or ctx is done.
func hold(ctx context.Context, addr, req string, trickle bool) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return // refused over a limit, or ctx done
	}
	defer context.AfterFunc(ctx, func() { c.Close() })()
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		return
	}
	if !trickle {
		io.Copy(io.Discard, c)
		return
	}
	go io.Copy(io.Discard, c) // ends when c is closed
	for ctx.Err() == nil {
		if _, err := c.Write([]byte(" ")); err != nil {
			return
		}
		pause(ctx, time.Second)
	}
}

// attackSlowBody is issue 21 item 3: 200 peers send complete headers with
// no token or a wrong one, announce a body of up to 256 KiB and withhold
// it.
func attackSlowBody(ctx context.Context, _ testing.TB, base, _ string) {
	addr := strings.TrimPrefix(base, "http://")
	attackers(ctx, 200, attackPause, func(ctx context.Context, i int) {
		auth := ""
		if i%2 == 1 {
			auth = "Authorization: Bearer wrong-token-0123456789\r\n"
		}
		hold(ctx, addr, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n{", addr, auth, 256<<10-1), false)
	})
}

// attackSlowBodyWithToken is a client with a valid token that announces a
// 1 MiB body and sends one byte of it a second, on 100 connections: each
// is cut at read_timeout, and the per-peer limit bounds how many it holds.
func attackSlowBodyWithToken(ctx context.Context, _ testing.TB, base, token string) {
	addr := strings.TrimPrefix(base, "http://")
	attackers(ctx, 100, attackPause, func(ctx context.Context, _ int) {
		hold(ctx, addr, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n{", addr, token, 1<<20), true)
	})
}

// attackConnFlood tries to hold 1,000 connections from one peer without
// a byte (until the header timeout closes them), each opened again a
// second after it was closed: past max_connections_per_peer each is
// reset as soon as it is accepted (about 870 a second).
func attackConnFlood(ctx context.Context, _ testing.TB, base, _ string) {
	addr := strings.TrimPrefix(base, "http://")
	attackers(ctx, 1000, time.Second, func(ctx context.Context, _ int) { hold(ctx, addr, "", false) })
}

// attackConnRate is attackConnFlood opening again after attackPause: about
// 8,700 connections a second reset at accept. It measures what a
// connection costs to refuse, which no per-peer limit can bound; a rate
// limit belongs to the firewall in front.
func attackConnRate(ctx context.Context, _ testing.TB, base, _ string) {
	addr := strings.TrimPrefix(base, "http://")
	attackers(ctx, 1000, attackPause, func(ctx context.Context, _ int) { hold(ctx, addr, "", false) })
}

// BenchmarkUnderAttack is a well-behaved client's latency while each
// attack runs: calls of the Wasm echo tool over Streamable HTTP through
// Serve on a loopback listener (the [serve] limits at their defaults),
// from its own peer address (127.0.0.2; the attackers are 127.0.0.1).
// p50-µs and p99-µs are to be set against attack=none; issue 21 asks
// for p99 within 2× of it.
//
//	go test -run '^$' -bench BenchmarkUnderAttack -benchtime 3000x ./host/gateway/
func BenchmarkUnderAttack(b *testing.B) {
	const token = "bench-token-0123456789"
	f := startTB(b, benchConfig(b)+"\n[serve.clients.bench]\ntoken = \""+token+"\"\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.g.Serve(sctx, ln) }()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			b.Error(err)
		}
	}()
	base := "http://" + ln.Addr().String()

	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}
	defer tr.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "well-behaved"}, nil)
	args := map[string]any{"text": "hello"}
	params := &mcp.CallToolParams{Name: "wasm__echo", Arguments: args}
	for _, a := range attacks {
		b.Run("attack="+a.name, func(b *testing.B) {
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			if a.run != nil {
				wg.Go(func() { a.run(ctx, b, base, token) })
			}
			defer func() {
				stop()
				wg.Wait()
			}()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{token, tr}}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			// Warm up while the attack builds up.
			for t0 := time.Now(); time.Since(t0) < time.Second; {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
			benchCalls(b, cs, params.Name, args)
		})
	}
}
