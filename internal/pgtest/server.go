package pgtest

import (
	"database/sql"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Server is a private PostgreSQL server for a program rather than a test
// binary (make scale-test): the same cluster as URL's (Debian's package,
// initdb in a temporary directory, run as the postgres user when root,
// listening only on a Unix socket in that directory, killed by the kernel
// if the program dies), but owned by the caller, who must Stop it.
type Server struct{ s *server }

// ErrNotInstalled is Start's error when no PostgreSQL is installed under
// /usr/lib/postgresql (apt-get install postgresql).
var ErrNotInstalled = errNotInstalled

// Start starts a new server and waits (up to 60s) until it accepts
// connections. Errors: ErrNotInstalled, initdb's output, or the server's
// first log lines when it did not start.
func Start() (*Server, error) {
	s, err := start()
	if err != nil {
		return nil, err
	}
	return &Server{s: s}, nil
}

// CreateDB creates the database name (letters, digits and _ only) and
// returns its URL: postgres://USER@/NAME?host=SOCKETDIR&sslmode=disable.
func (s *Server) CreateDB(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("pgtest: no database name")
	}
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return "", fmt.Errorf("pgtest: database name %q: use a-z, 0-9 and _", name)
		}
	}
	db, err := sql.Open("pgx", s.s.url("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return s.s.url(name), nil
}

// Stop stops the server (SIGQUIT, SIGKILL after 30s) and removes its
// directory.
func (s *Server) Stop() {
	s.s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.s.done:
	case <-time.After(30 * time.Second):
		s.s.cmd.Process.Kill()
		<-s.s.done
	}
	os.RemoveAll(s.s.dir)
}
