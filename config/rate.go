package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// RateLimit is a parsed rate key (issue 25, item 4): a token bucket that
// holds up to Burst tokens and gains N tokens every Per; each call takes
// one, and a call that finds none is refused (host.ErrRateLimited). The
// zero value is "no limit".
//
// The key's syntax is "N/UNIT" or "N/UNIT burst B": N a whole number from
// 1 to MaxRateN, UNIT one of s, m, h (also sec, second, min, minute,
// hour), B a whole number from 1 to MaxRateN (default N: a full bucket is
// one period's worth of calls). "60/m" is one call a second on average
// with bursts of up to 60; "60/m burst 1" is strictly one a second.
type RateLimit struct {
	N     int           // tokens per Per (0: no limit)
	Per   time.Duration // time.Second, time.Minute or time.Hour
	Burst int           // the bucket's capacity (default N)
}

// MaxRateN bounds N and burst of a rate key.
const MaxRateN = 1_000_000

// IsZero reports whether r is "no limit".
func (r RateLimit) IsZero() bool { return r.N <= 0 }

// PerSecond returns the refill rate in tokens per second (0 for no limit).
func (r RateLimit) PerSecond() float64 {
	if r.IsZero() || r.Per <= 0 {
		return 0
	}
	return float64(r.N) / r.Per.Seconds()
}

// String formats r as the key is written: "60/m", "60/m burst 10"; "" for
// no limit.
func (r RateLimit) String() string {
	if r.IsZero() {
		return ""
	}
	unit := "s"
	switch r.Per {
	case time.Minute:
		unit = "m"
	case time.Hour:
		unit = "h"
	}
	s := strconv.Itoa(r.N) + "/" + unit
	if r.Burst != r.N {
		s += " burst " + strconv.Itoa(r.Burst)
	}
	return s
}

// rateUnits are the units of a rate key.
var rateUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour,
}

// errRateSyntax is what every malformed rate key is told.
var errRateSyntax = errors.New(`write it as N/s, N/m or N/h, optionally followed by "burst B" (like "60/m" or "60/m burst 10")`)

// ParseRate parses a rate key (see RateLimit); "" is no limit. Errors say
// what is wrong and how to write it.
func ParseRate(s string) (RateLimit, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return RateLimit{}, nil
	}
	fields := strings.Fields(s)
	if len(fields) != 1 && len(fields) != 3 {
		return RateLimit{}, fmt.Errorf("%q is not a rate: %w", s, errRateSyntax)
	}
	num, unit, ok := strings.Cut(fields[0], "/")
	if !ok {
		return RateLimit{}, fmt.Errorf("%q is not a rate: %w", s, errRateSyntax)
	}
	n, err := rateCount(num)
	if err != nil {
		return RateLimit{}, fmt.Errorf("%q: the number of calls %w", s, err)
	}
	per, ok := rateUnits[strings.ToLower(unit)]
	if !ok {
		return RateLimit{}, fmt.Errorf("%q: %q is not a unit: use s, m or h (per second, minute, hour)", s, unit)
	}
	r := RateLimit{N: n, Per: per, Burst: n}
	if len(fields) == 3 {
		if strings.ToLower(fields[1]) != "burst" {
			return RateLimit{}, fmt.Errorf("%q is not a rate: %w", s, errRateSyntax)
		}
		if r.Burst, err = rateCount(fields[2]); err != nil {
			return RateLimit{}, fmt.Errorf("%q: the burst %w", s, err)
		}
	}
	return r, nil
}

// rateCount parses N or B of a rate key.
func rateCount(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is out of range: use 1 to %d", s, MaxRateN)
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number: %w", s, errRateSyntax)
	case n < 1 || n > MaxRateN:
		return 0, fmt.Errorf("%s is out of range: use 1 to %d", s, MaxRateN)
	}
	return int(min(n, math.MaxInt32)), nil
}

// validateRates parses the rate keys of [serve.clients.NAME],
// [profiles.NAME] and [tools.NAME] into their RateLimit fields.
func (l *loader) validateRates(cfg *Config) {
	parse := func(key toml.Key, s string, into *RateLimit) {
		r, err := ParseRate(s)
		if err != nil {
			l.errorf(key, "%v", err)
		}
		*into = r
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Serve.Clients)) {
		c := cfg.Serve.Clients[name]
		parse(toml.Key{"serve", "clients", name, "rate"}, c.Rate, &c.RateLimit)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		p := cfg.Profiles[name]
		parse(toml.Key{"profiles", name, "rate"}, p.Rate, &p.RateLimit)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		t := cfg.Tools[name]
		parse(toml.Key{"tools", name, "rate"}, t.Rate, &t.RateLimit)
	}
}

// HasRates reports whether any [serve.clients.NAME], [profiles.NAME] or
// [tools.NAME] sets a rate (once validated).
func (c *Config) HasRates() bool {
	for _, cl := range c.Serve.Clients {
		if cl != nil && !cl.RateLimit.IsZero() {
			return true
		}
	}
	for _, p := range c.Profiles {
		if p != nil && !p.RateLimit.IsZero() {
			return true
		}
	}
	for _, t := range c.Tools {
		if t != nil && !t.RateLimit.IsZero() {
			return true
		}
	}
	return false
}
