package sandbox

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/toolhost/toolhost/internal/termsafe"
)

// Guest logging bounds: a guest's stdout, stderr and log_* calls go to the
// plugin's hclog logger (never to the process's stdout), one log entry per
// line, each line cut at maxLogLine bytes, at most maxLogLinesPerSecond lines
// per second per plugin; lines beyond the rate are counted and reported as
// one warning when the next window opens.
const (
	maxLogLine           = 2048
	maxLogLinesPerSecond = 100
	stderrTailLines      = 16
)

// guestLog is the per-plugin rate limiter in front of the logger.
type guestLog struct {
	logger hclog.Logger

	mu      sync.Mutex
	window  time.Time
	count   int
	dropped int
}

func (g *guestLog) emit(level hclog.Level, stream string, msg []byte) {
	g.emitN(level, stream, msg, int64(len(msg)))
}

// emitN is emit for a message of total bytes of which msg is the start.
func (g *guestLog) emitN(level hclog.Level, stream string, msg []byte, total int64) {
	if level < g.logger.GetLevel() {
		return
	}
	if total > maxLogLine {
		msg = append(msg[:min(len(msg), maxLogLine):min(len(msg), maxLogLine)], "… (truncated "+strconv.FormatInt(total-int64(min(len(msg), maxLogLine)), 10)+" bytes)"...)
	}
	now := time.Now()
	g.mu.Lock()
	var dropped int
	if now.Sub(g.window) >= time.Second {
		dropped, g.dropped, g.count, g.window = g.dropped, 0, 0, now
	}
	if g.count >= maxLogLinesPerSecond {
		g.dropped++
		g.mu.Unlock()
		return
	}
	g.count++
	g.mu.Unlock()
	if dropped > 0 {
		g.logger.Warn("guest log lines dropped (over rate limit)", "dropped", dropped, "limit_per_second", maxLogLinesPerSecond)
	}
	// The message is written raw by hclog's text format: control characters
	// are escaped so a guest cannot forge host log lines or drive the
	// terminal.
	g.logger.Log(level, termsafe.Line(string(msg)), "stream", stream)
}

// lineWriter is an instance's stdout or stderr: it splits the guest's writes
// into lines for guestLog and, for stderr, keeps the last lines of the
// current call so a trap can be explained by the guest's panic message. An
// instance runs one call at a time, so lineWriter needs no lock.
type lineWriter struct {
	log    *guestLog
	stream string
	level  hclog.Level
	buf    []byte
	skip   bool // dropping the rest of an over-long line
	tail   []string
	keep   bool
	fatal  string // the call's first "panic: " or "fatal error: " line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.skip {
			room := maxLogLine + 1 - len(w.buf)
			if len(chunk) > room {
				w.buf = append(w.buf, chunk[:room]...)
			} else {
				w.buf = append(w.buf, chunk...)
			}
			if len(w.buf) > maxLogLine {
				w.flush()
				w.skip = true
			}
		}
		if i < 0 {
			break
		}
		if !w.skip {
			w.flush()
		}
		w.skip = false
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) flush() {
	if len(w.buf) == 0 {
		return
	}
	if w.keep {
		if w.fatal == "" && (bytes.HasPrefix(w.buf, []byte("panic: ")) || bytes.HasPrefix(w.buf, []byte("fatal error: "))) {
			w.fatal = string(w.buf)
		}
		if len(w.tail) == stderrTailLines {
			copy(w.tail, w.tail[1:])
			w.tail = w.tail[:stderrTailLines-1]
		}
		w.tail = append(w.tail, string(w.buf))
	}
	w.log.emit(w.level, w.stream, w.buf)
	w.buf = w.buf[:0]
}

// reset starts a new call: the tail is cleared.
func (w *lineWriter) reset() { w.tail, w.fatal = w.tail[:0], "" }

// lines returns the call's stderr tail including a pending partial line.
func (w *lineWriter) lines() []string {
	l := w.tail[:len(w.tail):len(w.tail)]
	if w.fatal != "" {
		l = append([]string{w.fatal}, l...)
	}
	if len(w.buf) > 0 {
		l = append(l, string(w.buf))
	}
	return l
}

// extismLevel maps an hclog level to the value get_log_level returns
// (Extism: 0 trace, 1 debug, 2 info, 3 warn, 4 error, MaxInt32 off).
func extismLevel(l hclog.Level) int32 {
	switch l {
	case hclog.Trace:
		return 0
	case hclog.Debug:
		return 1
	case hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		return 2
	case hclog.Warn:
		return 3
	case hclog.Error:
		return 4
	default:
		return 1<<31 - 1
	}
}
