// Package pgtest runs a private PostgreSQL server for tests: Debian's
// postgresql package (/usr/lib/postgresql/VERSION/bin), a cluster made by
// initdb in a temporary directory, listening only on a Unix socket there
// (no TCP port), started once per test binary and stopped by Main (and, if
// the test binary dies, by the kernel: the server is started with a parent
// death signal).
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and in a test: url := pgtest.URL(t) gives a fresh database of its own.
// Without the package the test is skipped, or fails when CI is set (CI
// installs it: .ci/run).
//
// initdb and postgres refuse to run as root: as root they run as the
// "postgres" user the Debian package creates.
package pgtest

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

var (
	once     sync.Once
	srv      *server
	startErr error
	dbSeq    atomic.Int64
)

type server struct {
	dir  string // owned by the server's user
	sock string // the socket directory
	cmd  *exec.Cmd
	done chan struct{}
	user string
}

// Main runs the tests and then stops the server, if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the server (SIGQUIT: immediate shutdown) and removes its
// directory. Main calls it.
func Stop() {
	if srv == nil {
		return
	}
	srv.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		srv.cmd.Process.Kill()
		<-srv.done
	}
	os.RemoveAll(srv.dir)
	srv = nil
}

// Bin returns the directory of the newest installed PostgreSQL's programs,
// or "" when none is installed.
func Bin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Dir(dirs[0])
}

func version(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// URL returns the URL of a new, empty database on the test binary's
// server (started at the first call), for t alone. It skips t when
// PostgreSQL is not installed (fails it when the CI variable is set).
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { srv, startErr = start() })
	if startErr != nil {
		if os.Getenv("CI") == "" && errors.Is(startErr, errNotInstalled) {
			t.Skip(startErr)
		}
		t.Fatal(startErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	db, err := sql.Open("pgx", srv.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return srv.url(name)
}

var errNotInstalled = errors.New("pgtest: PostgreSQL is not installed (apt-get install postgresql)")

func (s *server) url(db string) string {
	return "postgres://" + s.user + "@/" + db + "?host=" + s.sock + "&sslmode=disable"
}

func start() (*server, error) {
	bin := Bin()
	if bin == "" {
		return nil, errNotInstalled
	}
	var cred *syscall.Credential
	owner := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		owner = "postgres"
	} else {
		u, err := user.Current()
		if err != nil {
			return nil, err
		}
		owner = u.Username
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	s := &server{dir: dir, sock: dir, done: make(chan struct{}), user: owner}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", owner, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", s.sock, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The parent death signal is sent when the THREAD that started the
	// child ends, not the process (prctl(2) PR_SET_PDEATHSIG): a goroutine
	// that locks its thread and returns (the stdio transport's do) ends
	// the thread it runs on, which may be the one that started postgres;
	// the server then shut down in the middle of a test ("the database
	// system is shutting down"). So postgres is started, and waited for,
	// on a thread of its own, locked until the server exits.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: postgres: %w", err)
	}
	ready := make(chan struct{})
	var logTail []string
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		signaled := false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if len(logTail) < 50 {
				logTail = append(logTail, line)
			}
			mu.Unlock()
			if !signaled && strings.Contains(line, "ready to accept connections") {
				signaled = true
				close(ready)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
	case <-ctx.Done():
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(dir)
	mu.Lock()
	defer mu.Unlock()
	return nil, fmt.Errorf("pgtest: postgres did not start:\n%s", strings.Join(logTail, "\n"))
}

// PID returns the process id of the test binary's PostgreSQL server, 0
// when none runs: a test that checks it left no child process behind
// leaves this one out (Main stops it).
func PID() int {
	if srv == nil || srv.cmd.Process == nil {
		return 0
	}
	return srv.cmd.Process.Pid
}
