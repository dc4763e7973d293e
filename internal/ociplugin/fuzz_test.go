package ociplugin

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzWalkTar: an image layer is untrusted bytes (its digest only proves
// the registry sent what the manifest names). walkTar never panics, never
// reads more than its limit unpacked, and fails only with ErrTooLarge or
// ErrMediaType.
func FuzzWalkTar(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "plugin.wasm", Size: 8, Typeflag: tar.TypeReg})
	tw.Write([]byte("\x00asm\x01\x00\x00\x00"))
	tw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1 << 16
		var read int64
		err := walkTar(bytes.NewReader(b), max, func(_ int, hdr *tar.Header, r io.Reader) (bool, error) {
			n, err := io.Copy(io.Discard, r)
			read += n
			return false, err
		})
		if read > max {
			t.Fatalf("read %d bytes past the %d limit", read, max)
		}
		if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrMediaType) {
			t.Fatalf("walkTar error %v wraps neither ErrTooLarge nor ErrMediaType", err)
		}
	})
}
