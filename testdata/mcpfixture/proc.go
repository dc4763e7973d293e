package main

import (
	"context"
	"flag"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// -proc adds the tool proc_view, which reports how the server sees its
// PID namespace through /proc: its getpid(), where /proc/self points, the
// command line of /proc/1, and every process /proc lists. A server whose
// /proc matches its PID namespace sees pid 1, /proc/self -> "1", its own
// command line as /proc/1's, and no process of another namespace.
var procView = flag.Bool("proc", false, "add the tool proc_view (getpid, /proc/self, /proc/1/cmdline and the PIDs /proc lists)")

type procViewOut struct {
	Pid         int      `json:"pid"`    // getpid()
	Self        string   `json:"self"`   // readlink /proc/self
	Init        []string `json:"init"`   // /proc/1/cmdline, split at NUL
	Args        []string `json:"args"`   // this process's os.Args
	Listed      []int    `json:"listed"` // the numeric entries of /proc
	CapEff      string   `json:"capEff"` // the CapEff line of /proc/self/status
	CapAmb      string   `json:"capAmb"` // the CapAmb line of /proc/self/status
	Error       string   `json:"error,omitempty"`
	ListedNames []string `json:"listedNames"` // /proc/PID/comm of each listed PID
}

func addProcView(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "proc_view", Description: "Report getpid(), /proc/self, /proc/1/cmdline and the PIDs /proc lists."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, procViewOut, error) {
			out := procViewOut{Pid: os.Getpid(), Args: os.Args}
			var errs []string
			if self, err := os.Readlink("/proc/self"); err != nil {
				errs = append(errs, err.Error())
			} else {
				out.Self = self
			}
			if b, err := os.ReadFile("/proc/1/cmdline"); err != nil {
				errs = append(errs, err.Error())
			} else {
				out.Init = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			}
			ents, err := os.ReadDir("/proc")
			if err != nil {
				errs = append(errs, err.Error())
			}
			for _, e := range ents {
				if pid, err := strconv.Atoi(e.Name()); err == nil {
					out.Listed = append(out.Listed, pid)
				}
			}
			sort.Ints(out.Listed)
			for _, pid := range out.Listed {
				comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
				out.ListedNames = append(out.ListedNames, strings.TrimSpace(string(comm)))
			}
			if b, err := os.ReadFile("/proc/self/status"); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
						out.CapEff = strings.TrimSpace(v)
					}
					if v, ok := strings.CutPrefix(line, "CapAmb:"); ok {
						out.CapAmb = strings.TrimSpace(v)
					}
				}
			}
			out.Error = strings.Join(errs, "; ")
			return nil, out, nil
		})
}
