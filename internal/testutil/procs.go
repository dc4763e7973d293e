package testutil

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procStat returns the state and parent of process pid from /proc (Linux),
// or ok false when it does not exist.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

// Alive reports whether process pid exists and is not a zombie.
func Alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// Descendants lists the live (not zombie) descendants of process pid, from
// /proc: its children, their children, and so on, whatever their process
// group or session.
func Descendants(pid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]int{}
	for _, d := range dirs {
		p, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if state, ppid, ok := procStat(p); ok && state != "Z" && state != "X" {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// WaitGone waits until none of pids is alive, checking /proc every
// PollInterval up to limit (with Eventually), and returns how long it took;
// it fails tb naming the survivors at the limit.
func WaitGone(tb testing.TB, pids []int, limit time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	var alive []int
	Eventually(tb, limit, func() bool {
		alive = alive[:0]
		for _, p := range pids {
			if Alive(p) {
				alive = append(alive, p)
			}
		}
		return len(alive) == 0
	}, "processes still running: ", func() string { return fmt.Sprint(alive) })
	return time.Since(start)
}
