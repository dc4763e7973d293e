package ociplugin

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// extractModule takes the module out of an image layer (a tar, plain or
// gzip-compressed, already verified against its digest) as hyper-mcp
// does: the entry /plugin.wasm, else the shallowest regular file named
// plugin.wasm, else the only regular .wasm file. What the layer unpacks to
// is bounded by max (ErrTooLarge). It stores the module and returns its
// digest; errNoModule when the layer has none.
func extractModule(ref string, c *cache, blob *os.File, l descriptor, max int64, pin string) (string, error) {
	// Pass 1 chooses the entry by its header, pass 2 copies it: the layer
	// is on disk, so nothing is held in memory.
	best, bestRank, bestDepth, wasmFiles := -1, 3, 0, 0
	err := walkTar(blob, max, func(i int, hdr *tar.Header, _ io.Reader) (bool, error) {
		if hdr.Typeflag != tar.TypeReg {
			return false, nil
		}
		p := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if !strings.HasSuffix(p, ".wasm") {
			return false, nil
		}
		wasmFiles++
		rank, depth := 2, strings.Count(p, "/")
		switch {
		case p == "plugin.wasm":
			rank = 0
		case path.Base(p) == "plugin.wasm":
			rank = 1
		}
		if rank < bestRank || rank == bestRank && depth < bestDepth {
			best, bestRank, bestDepth = i, rank, depth
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("%s: layer %s: %w", ref, l.Digest, err)
	}
	if best < 0 {
		return "", errNoModule
	}
	if bestRank == 2 && wasmFiles > 1 {
		return "", fmt.Errorf("%s: layer %s holds %d .wasm files and no plugin.wasm: %w", ref, l.Digest, wasmFiles, ErrMediaType)
	}
	if _, err := blob.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("%w: %w", ErrCache, err)
	}
	var digest string
	err = walkTar(blob, max, func(i int, hdr *tar.Header, r io.Reader) (bool, error) {
		if i != best {
			return false, nil
		}
		dir := filepath.Dir(c.modulePath(l.Digest))
		tmp, err := os.CreateTemp(dir, ".module-*")
		if err != nil {
			return true, fmt.Errorf("%w: %w", ErrCache, err)
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		br := bufio.NewReader(r)
		if b, err := br.Peek(4); err != nil || !bytes.Equal(b, wasmMagic) {
			return true, fmt.Errorf("%s: %s in layer %s is not a WebAssembly module: %w", ref, hdr.Name, l.Digest, ErrMediaType)
		}
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(tmp, h), br); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				return true, fmt.Errorf("%w: %w", ErrCache, err)
			}
			return true, err
		}
		digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
		if err := checkPin(ref, digest, pin); err != nil {
			return true, err
		}
		if err := tmp.Sync(); err != nil {
			return true, fmt.Errorf("%w: %w", ErrCache, err)
		}
		if err := os.Rename(tmp.Name(), c.modulePath(digest)); err != nil {
			return true, fmt.Errorf("%w: %w", ErrCache, err)
		}
		return true, nil
	})
	if err != nil {
		if errors.Is(err, ErrPinned) || errors.Is(err, ErrMediaType) || errors.Is(err, ErrCache) {
			return "", err
		}
		return "", fmt.Errorf("%s: layer %s: %w", ref, l.Digest, err)
	}
	return digest, nil
}

// walkTar calls f for each entry of the tar in blob (gunzipped when it
// starts with gzip's magic), with the entry's index, header and content,
// until f returns true or an error. More than max bytes unpacked is
// ErrTooLarge; a malformed archive is ErrMediaType.
func walkTar(blob io.Reader, max int64, f func(int, *tar.Header, io.Reader) (bool, error)) error {
	br := bufio.NewReader(blob)
	var r io.Reader = br
	if b, err := br.Peek(2); err == nil && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("not gzip: %v: %w", err, ErrMediaType)
		}
		defer zr.Close()
		r = zr
	}
	lr := &limitReader{r: r, n: max}
	tr := tar.NewReader(lr)
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return fmt.Errorf("it unpacks to more than %d bytes: %w", max, ErrTooLarge)
			}
			return fmt.Errorf("not a tar archive: %v: %w", err, ErrMediaType)
		}
		if hdr.Size > max {
			return fmt.Errorf("%s is %d bytes, over the %d-byte limit: %w", hdr.Name, hdr.Size, max, ErrTooLarge)
		}
		done, err := f(i, hdr, tr)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return fmt.Errorf("it unpacks to more than %d bytes: %w", max, ErrTooLarge)
			}
			return err
		}
		if done {
			return nil
		}
	}
}

// limitReader fails with ErrTooLarge once more than n bytes are read.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, ErrTooLarge
	}
	return n, err
}
