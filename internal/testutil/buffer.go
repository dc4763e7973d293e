package testutil

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that many goroutines may write at once: a test
// hands it to a logger (hclog, slog) as its output and reads String when
// the work is done. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
