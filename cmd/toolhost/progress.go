package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/toolhost/toolhost/host"
)

// progressBar draws a call's progress on one line of a terminal, redrawn
// in place; clear removes it before the result is printed.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	drawn bool
}

func (b *progressBar) update(p host.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprint(b.w, "\r\x1b[K"+renderProgress(p, 30))
	b.drawn = true
}

func (b *progressBar) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

// renderProgress renders p as "[#####-----]  50% 5/10 message" (a bar of
// width cells) when its total is known, else "5 message". The server's
// message is cut to 60 characters and stripped of control characters.
func renderProgress(p host.Progress, width int) string {
	msg := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, p.Message)
	if r := []rune(msg); len(r) > 60 {
		msg = string(r[:59]) + "…"
	}
	if p.Total <= 0 {
		return strings.TrimSpace(fmt.Sprintf("%g %s", p.Progress, msg))
	}
	frac := min(max(p.Progress/p.Total, 0), 1)
	full := int(frac * float64(width))
	return strings.TrimSpace(fmt.Sprintf("[%s%s] %3.0f%% %g/%g %s", strings.Repeat("#", full), strings.Repeat("-", width-full),
		frac*100, p.Progress, p.Total, msg))
}
