package native

import "sync"

// denials records refusals (owned by the relay); stub until the relay lands.
type denials struct {
	mu sync.Mutex
	d  Denials
}

func (d *denials) snapshot() Denials {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.d
}
