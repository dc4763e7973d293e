package native

import (
	"sync"
	"time"
)

// maxLoggedHosts bounds the hosts whose first denial is logged: a server
// that tries one name after another is counted, not logged, past it.
const maxLoggedHosts = 1024

// denials records a Launcher's refusals (the relay records them), across
// the server's restarts: every refusal is counted; the first of each host
// is logged.
type denials struct {
	mu     sync.Mutex
	d      Denials
	logged map[string]struct{}
}

func (d *denials) snapshot() Denials {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.d
}

// record counts one refusal of host (a name or IP, without port) that msg
// explains, and reports whether it is the first refusal of host, the one to
// log (false past maxLoggedHosts hosts).
func (d *denials) record(host, msg string) (first bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.d.Count++
	d.d.Last, d.d.LastAt = msg, time.Now()
	if _, ok := d.logged[host]; ok || len(d.logged) >= maxLoggedHosts {
		return false
	}
	if d.logged == nil {
		d.logged = make(map[string]struct{})
	}
	d.logged[host] = struct{}{}
	return true
}
