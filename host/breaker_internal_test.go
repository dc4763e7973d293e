package host

import (
	"testing"
	"time"

	"github.com/toolhost/toolhost/config"
)

// BenchmarkBreakerAllow is the breaker layer's cost per call: memory only
// (no store), with a store but no open from it (one atomic load more), and
// refused by an open read from the store.
func BenchmarkBreakerAllow(b *testing.B) {
	c := config.Circuit{Failures: 5, Cooldown: config.Duration(time.Minute), Successes: 1}
	share := &breakerShare{queue: make(chan breakerWrite, breakerQueue)}
	for _, bc := range []struct {
		name  string
		share *breakerShare
		open  bool
	}{{"store=none", nil, false}, {"store=on", share, false}, {"store=on/open", share, true}} {
		b.Run(bc.name, func(b *testing.B) {
			br := newBreaker("x", c, bc.share, backendKey(bc.name), nil)
			if bc.open {
				br.remote.p.Store(&remoteOpen{until: time.Now().Add(time.Hour), origin: "r#1", failures: 5})
			}
			b.ReportAllocs()
			for b.Loop() {
				done, err := br.allow("x", "")
				if bc.open != (err != nil) {
					b.Fatal(err)
				}
				if done != nil {
					done(false)
				}
			}
		})
	}
}
