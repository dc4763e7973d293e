package main

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
)

// TestPrintStatusRestarting: a restarting backend's UPTIME column says
// when its next attempt is; one lost just now, whose supervisor has not
// scheduled the attempt yet (NextRestart zero), shows "-", not a time
// counted from year 1.
func TestPrintStatusRestarting(t *testing.T) {
	var b strings.Builder
	printStatus(&b, []host.BackendStatus{
		{Name: "soon", Kind: "stdio", State: host.StateRestarting, NextRestart: time.Now().Add(time.Minute)},
		{Name: "justlost", Kind: "stdio", State: host.StateRestarting},
	})
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 3 {
		t.Fatalf("status:\n%s", b.String())
	}
	if !strings.Contains(lines[1], "next in 1m") && !strings.Contains(lines[1], "next in 59.") {
		t.Errorf("scheduled restart: %q; want 'next in' about a minute", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) < 6 || f[3] != "restarting" || f[5] != "-" {
		t.Errorf("restart not scheduled yet: %q; want UPTIME '-'", lines[2])
	}
}
