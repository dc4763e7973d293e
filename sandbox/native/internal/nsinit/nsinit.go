//go:build linux

package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == Arg0 {
		run()
	}
}

// maxConfig bounds the Config the child reads, in bytes.
const maxConfig = 4 << 20

// stageError is a failed step of the child, reported on StatusFD.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.stage + ": " + e.err.Error() }

func stage(name string, err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stage: name, err: err}
}

// run never returns: it sets the sandbox up as c says and execve()s the
// server, or reports the failed stage on StatusFD and exits with status
// 127. Everything runs on one locked thread: capabilities, no_new_privs,
// the Landlock domain and the seccomp filter are per thread, and execve
// keeps the calling thread's.
func run() {
	runtime.LockOSThread()
	unix.CloseOnExec(StatusFD)
	// Only the child toolhost started is PID 1 of a new PID namespace: a
	// process merely named Arg0 stops here, before it reads anything.
	if os.Getpid() != 1 {
		fail(stage("namespace", errors.New("not PID 1 of a new PID namespace")))
	}
	c, err := readConfig()
	if err != nil {
		fail(stage("config", err))
	}
	if err := setup(c); err != nil {
		fail(err)
	}
	err = unix.Exec(c.Path, c.Argv, c.Env)
	fail(stage("exec "+c.Path, err))
}

func readConfig() (*Config, error) {
	f := os.NewFile(ConfigFD, "config")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfig {
		return nil, errors.New("config too large")
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	if c.Path == "" || len(c.Argv) == 0 {
		return nil, errors.New("no program")
	}
	return &c, nil
}

// setup runs the steps of Config in order (see the package doc of
// package native).
func setup(c *Config) error {
	if err := buildRoot(c); err != nil {
		return err
	}
	dir := c.Dir
	if dir == "" {
		dir = "/"
	}
	if err := unix.Chdir(dir); err != nil {
		if err := unix.Chdir("/"); err != nil {
			return stage("chdir /", err)
		}
	}
	if err := setupNetwork(c); err != nil {
		return stage("network", err)
	}
	unix.Close(ListenFD)
	if err := setRlimits(c.RlimitAS, c.RlimitNPROC); err != nil {
		return stage("rlimit", err)
	}
	// Landlock needs no_new_privs (or CAP_SYS_ADMIN); set it first.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return stage("no_new_privs", err)
	}
	if c.Landlock != nil {
		if err := restrictLandlock(c.Landlock); err != nil {
			return stage("landlock", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return stage("capabilities", err)
	}
	if c.Seccomp {
		if err := installSeccomp(); err != nil {
			return stage("seccomp", err)
		}
	}
	return nil
}

// fail reports err on StatusFD as "stage\x00errno\x00message" and exits
// with status 127.
func fail(err error) {
	st, msg := "setup", err.Error()
	var se *stageError
	if errors.As(err, &se) {
		st, msg = se.stage, se.err.Error()
	}
	var errno unix.Errno
	errors.As(err, &errno)
	unix.Write(StatusFD, []byte(fmt.Sprintf("%s\x00%s\x00%s", st, strconv.Itoa(int(errno)), msg)))
	unix.Exit(127)
}
