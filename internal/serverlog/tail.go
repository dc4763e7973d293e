package serverlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// backupTime is lumberjack's timestamp in a rotated file's name:
// NAME-2006-01-02T15-04-05.000.log (UTC).
const backupTime = "2006-01-02T15-04-05.000"

// Files returns the log files of backend name in dir, newest first: the
// current NAME.log (if it exists), then the rotated ones by their
// timestamp. Errors: ErrBadName; ErrNoLogs when there is none.
func Files(dir, name string) ([]string, error) {
	cur, err := File(dir, name)
	if err != nil {
		return nil, err
	}
	var out []string
	if _, err := os.Stat(cur); err == nil {
		out = append(out, cur)
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	type backup struct {
		path string
		t    time.Time
	}
	var bs []backup
	for _, e := range ents {
		ts, ok := strings.CutPrefix(e.Name(), name+"-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		ts, ok = strings.CutSuffix(ts, ".log")
		if !ok {
			continue
		}
		// A backend name has no ".", so NAME-TIMESTAMP.log is never
		// another backend's current file.
		t, err := time.Parse(backupTime, ts)
		if err != nil {
			continue
		}
		bs = append(bs, backup{filepath.Join(dir, e.Name()), t})
	}
	slices.SortFunc(bs, func(a, b backup) int { return b.t.Compare(a.t) })
	for _, b := range bs {
		out = append(out, b.path)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w for %q in %s", ErrNoLogs, name, dir)
	}
	return out, nil
}

// Tail returns the last n lines (n ≥ 1) of backend name's log in dir,
// oldest first, reading back into the rotated files when the current one
// has fewer. It is bounded whatever the files' sizes: it seeks from the
// end, scans at most 64 MiB back per file for line ends, cuts a line
// longer than MaxLine (keeping its start, then "…"), and returns at most
// MaxTailBytes (older lines are left out). Errors: ErrBadName, ErrNoLogs,
// and I/O errors.
func Tail(dir, name string, n int) ([]string, error) {
	files, err := Files(dir, name)
	if err != nil {
		return nil, err
	}
	budget := MaxTailBytes
	var rev []string // newest first
	for _, path := range files {
		if len(rev) >= n || budget <= 0 {
			break
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // rotated away meanwhile
		} else if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil {
			var lines []string
			lines, err = tailFile(f, fi.Size(), n-len(rev), &budget)
			rev = append(rev, lines...)
		}
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	slices.Reverse(rev)
	return rev, nil
}

// tailFile returns up to need lines ending at size in f, newest first,
// spending budget (bytes returned).
func tailFile(f io.ReaderAt, size int64, need int, budget *int) ([]string, error) {
	end := size
	if end > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], end-1); err != nil {
			return nil, err
		}
		if last[0] == '\n' {
			end-- // the last line's terminator
		}
	}
	var out []string
	buf := make([]byte, 32<<10)
	lineEnd := end // the end (exclusive) of the line being looked for
	pos := end
	for len(out) < need && *budget > 0 && end-pos <= maxScan {
		if pos == 0 {
			if end > 0 { // the first line (empty if the file starts with a line end)
				s, err := readLine(f, 0, lineEnd, budget)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			break
		}
		chunk := int64(len(buf))
		if pos < chunk {
			chunk = pos
		}
		pos -= chunk
		b := buf[:chunk]
		if _, err := f.ReadAt(b, pos); err != nil && err != io.EOF {
			return nil, err
		}
		for len(out) < need && *budget > 0 {
			i := bytes.LastIndexByte(b, '\n')
			if i < 0 {
				break
			}
			start := pos + int64(i) + 1
			s, err := readLine(f, start, lineEnd, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			lineEnd = start - 1
			b = b[:i]
		}
	}
	if pos > 0 && len(out) < need && *budget > 0 && lineEnd >= pos {
		// The scan bound came before this line's start: show its end.
		start := max(pos, lineEnd-MaxLine)
		s, err := readLine(f, start, lineEnd, budget)
		if err != nil {
			return nil, err
		}
		out = append(out, "…"+strings.ToValidUTF8(s, ""))
	}
	return out, nil
}

// readLine reads f[start:end] cut to MaxLine, as valid text.
func readLine(f io.ReaderAt, start, end int64, budget *int) (string, error) {
	n := end - start
	cut := n > MaxLine
	if cut {
		n = MaxLine
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, start); err != nil && err != io.EOF {
		return "", err
	}
	s := string(b)
	if cut {
		s = cutText(s) + "…"
	}
	*budget -= len(s)
	return s, nil
}

// cutText drops a rune cut in two at the end of s.
func cutText(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
