package units

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1000: "1000B", 1024: "1KiB", 3 << 10: "3KiB", 256 << 20: "256MiB", 1 << 30: "1GiB", 1<<30 + 1<<20: "1025MiB", -(2 << 20): "-2MiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
