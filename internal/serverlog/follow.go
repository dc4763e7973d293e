package serverlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// Follow calls emit with the last n lines of backend name's log in dir
// (as Tail; none when n is 0), then with each line appended to it, until
// ctx ends (then it returns nil). It polls every interval (default 250ms)
// and follows a rotation: when NAME.log is replaced (renamed away by the
// rotation) it reads the old file to its end and goes on with the new one
// from its start; a file truncated in place is read again from its start.
// A log file that does not exist yet is waited for. A line longer than
// MaxLine is cut (its start, then "…"). Errors: ErrBadName, and I/O errors
// other than a missing file.
func Follow(ctx context.Context, dir, name string, n int, interval time.Duration, emit func(string)) error {
	path, err := File(dir, name)
	if err != nil {
		return err
	}
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var off int64
	var partial []byte // the line being read
	skip := false      // the rest of a line emitted cut is being skipped
	// open opens the current file; at the first open, after printing the
	// tail up to its size.
	first := true
	open := func() error {
		nf, err := os.Open(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		f, off, partial, skip = nf, 0, partial[:0], false
		if first {
			first = false
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			off = fi.Size()
			if n > 0 {
				budget := MaxTailBytes
				lines, err := tailFile(f, off, n, &budget)
				if err != nil {
					return err
				}
				for i := len(lines) - 1; i >= 0; i-- {
					emit(lines[i])
				}
			}
		}
		return nil
	}
	// drain emits what f has beyond off.
	buf := make([]byte, 64<<10)
	drain := func() error {
		for {
			k, err := f.ReadAt(buf, off)
			off += int64(k)
			b := buf[:k]
			for len(b) > 0 {
				i := bytes.IndexByte(b, '\n')
				seg := b
				if i >= 0 {
					seg = b[:i]
				}
				if !skip {
					// Keep at most MaxLine+1 bytes: enough to know it is over.
					if room := MaxLine + 1 - len(partial); len(seg) > room {
						seg = seg[:room]
					}
					partial = append(partial, seg...)
					if len(partial) > MaxLine {
						emit(cutText(string(partial[:MaxLine])) + "…")
						partial, skip = partial[:0], true
					}
				}
				if i < 0 {
					break
				}
				if !skip {
					emit(string(partial))
				}
				partial, skip = partial[:0], false
				b = b[i+1:]
			}
			if err == io.EOF || k == 0 {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	for {
		if f == nil {
			if err := open(); err != nil {
				return err
			}
		}
		if f != nil {
			if err := drain(); err != nil {
				return err
			}
			// Rotated (NAME.log is another file now) or truncated?
			cur, serr := os.Stat(path)
			fi, ferr := f.Stat()
			switch {
			case serr == nil && ferr == nil && !os.SameFile(cur, fi):
				if err := drain(); err != nil { // what came before the rename
					return err
				}
				f.Close()
				f = nil
				if err := open(); err != nil {
					return err
				}
				continue
			case ferr == nil && fi.Size() < off:
				off, partial, skip = 0, partial[:0], false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
