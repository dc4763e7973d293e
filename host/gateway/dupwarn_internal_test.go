package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testutil"
)

// lockedLog is a log destination safe for concurrent writes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDuplicateResourceWarnedOnce: two backends that list one resource URI
// get one warning naming the skipped backend, not one per resync (every
// catalogue or state event resyncs the gateway's servers).
func TestDuplicateResourceWarnedOnce(t *testing.T) {
	fx := testutil.Fixture(t)
	cfg, err := config.Parse([]byte("[servers.a]\ncommand = \""+fx+"\"\n[servers.b]\ncommand = \""+fx+"\"\n"), &config.Options{Name: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	logger := hclog.New(&hclog.LoggerOptions{Name: "gw", Output: &logs, Level: hclog.Warn})
	h, err := host.New(context.Background(), cfg, &host.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	g, err := New(h, &Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 3 {
		g.syncAll(ctx)
	}
	const warning = "resource listed by more than one backend"
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("%d warnings about the duplicate resource after 3 resyncs, want 1:\n%s", n, logs.String())
	}
}
