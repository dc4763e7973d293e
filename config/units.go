package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/units"
)

// Duration is a time.Duration written in TOML as a Go duration string
// ("250ms", "5s", "1m30s"), or a whole number of days ("90d"). Negative
// durations are rejected.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	str := strings.TrimSpace(string(b))
	var v time.Duration
	var err error
	if days, ok := strings.CutSuffix(str, "d"); ok {
		var n int64
		n, err = strconv.ParseInt(days, 10, 32)
		v = time.Duration(n) * 24 * time.Hour
	} else {
		v, err = time.ParseDuration(str)
	}
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a number with a unit, like \"30s\", \"500ms\" or \"90d\"", b)
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: must not be negative", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText formats d as a duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Size is a number of bytes written in TOML as an integer or a string with a
// unit: B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024), e.g.
// "64MiB", "4MB", "512KiB", "1024".
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// UnmarshalText parses a size string.
func (s *Size) UnmarshalText(b []byte) error {
	str := strings.TrimSpace(string(b))
	mult := int64(1)
	num := str
	for _, u := range sizeUnits {
		if strings.HasSuffix(str, u.suffix) {
			mult, num = u.mult, strings.TrimSpace(strings.TrimSuffix(str, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("invalid size %q: want a whole number of bytes with an optional unit, like \"64MiB\" or \"4MB\"", str)
	}
	if n > (1<<62)/mult {
		return fmt.Errorf("invalid size %q: too large", str)
	}
	*s = Size(n * mult)
	return nil
}

// MarshalText formats s in the largest binary unit that divides it.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String formats s in the largest binary unit that divides it ("64MiB").
func (s Size) String() string { return units.Bytes(int64(s)) }
