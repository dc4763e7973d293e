package config

import (
	"strings"
	"testing"
	"time"
)

func TestDurationUnmarshalText(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"30s", 30 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"1m30s", 90 * time.Second, ""},
		{" 5s ", 5 * time.Second, ""},
		{"0s", 0, ""},
		{"5", 0, "with a unit"},
		{"", 0, "with a unit"},
		{"5 s", 0, "with a unit"},
		{"-1s", 0, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d Duration
			err := d.UnmarshalText([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("UnmarshalText(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || d.Std() != tt.want {
				t.Fatalf("UnmarshalText(%q) = %v, %v; want %v", tt.in, d, err, tt.want)
			}
			text, _ := d.MarshalText()
			if string(text) != tt.want.String() {
				t.Errorf("MarshalText = %q, want %q", text, tt.want.String())
			}
		})
	}
}

func TestSizeUnmarshalText(t *testing.T) {
	tests := []struct {
		in      string
		want    Size
		str     string
		wantErr bool
	}{
		{"1024", 1024, "1KiB", false},
		{"64MiB", 64 << 20, "64MiB", false},
		{"64 MiB", 64 << 20, "64MiB", false},
		{"512KiB", 512 << 10, "512KiB", false},
		{"2GiB", 2 << 30, "2GiB", false},
		{"4MB", 4_000_000, "4000000B", false},
		{"100KB", 100_000, "100000B", false},
		{"1GB", 1_000_000_000, "1000000000B", false},
		{"7B", 7, "7B", false},
		{"0", 0, "0B", false},
		{"", 0, "", true},
		{"MiB", 0, "", true},
		{"1.5MiB", 0, "", true},
		{"-1KiB", 0, "", true},
		{"64mib", 0, "", true},
		{"64 potatoes", 0, "", true},
		{"99999999999GiB", 0, "", true},
		{"9223372036854775807", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var s Size
			err := s.UnmarshalText([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("UnmarshalText(%q) = %v, want an error", tt.in, s)
				}
				return
			}
			if err != nil || s != tt.want {
				t.Fatalf("UnmarshalText(%q) = %d, %v; want %d", tt.in, s, err, tt.want)
			}
			if s.String() != tt.str {
				t.Errorf("String() = %q, want %q", s.String(), tt.str)
			}
			// The formatted size parses back to the same value.
			var back Size
			if err := back.UnmarshalText([]byte(s.String())); err != nil || back != s {
				t.Errorf("round trip of %q = %d, %v", s.String(), back, err)
			}
		})
	}
}

func TestHostGlobPorts(t *testing.T) {
	for in, want := range map[string]string{
		"Example.com:8080": "example.com:8080",
		"*.example.com":    "*.example.com",
		"127.0.0.1:3000":   "127.0.0.1:3000",
		"[::1]:8080":       "[::1]:8080",
		"::1":              "::1",
	} {
		got, err := hostGlob(in)
		if err != nil || got != want {
			t.Errorf("hostGlob(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"a.com:", "a.com:0", "[::1", "[1.2.3.4]:80", "a.com/x"} {
		if got, err := hostGlob(bad); err == nil {
			t.Errorf("hostGlob(%q) = %q, want an error", bad, got)
		}
	}
}
