// Command relay is the floor of any stdio gateway, for the gateway hop
// benchmark (host/gateway/fast_bench_test.go, way "relay"): it starts the
// command its arguments name and copies bytes from its stdin to the
// child's and from the child's stdout to its own, parsing nothing, with
// one goroutine each way. A call through it pays what a third process on
// the path costs (two more pipe writes and reads, two more wake-ups) and
// nothing a gateway does.
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: relay COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	go func() {
		_, _ = copyLines(in, os.Stdin)
		in.Close() // the client closed: the child sees EOF and exits
	}()
	_, _ = copyLines(os.Stdout, out)
	_ = cmd.Wait()
}

// copyLines copies src to dst with one read and one write per chunk, as
// a gateway that forwards each line as it comes would. Not io.Copy: for
// *os.File ends it takes ReadFrom, which on Linux may splice(2) pipe to
// pipe in the kernel, a floor no gateway that reads its messages has.
func copyLines(dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}
