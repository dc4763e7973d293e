package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := lookupIn(map[string]string{"A": "alpha", "B": "beta", "EMPTY": "", "DOLLAR": "$", "REF": "${A}"})
	tests := []struct {
		in, want string
		errs     []string // parts of the expected problems, in order
	}{
		{"plain", "plain", nil},
		{"${A}", "alpha", nil},
		{"x${A}y${B}z", "xalphaybetaz", nil},
		{"${A:-d}", "alpha", nil},
		{"${UNSET:-d}", "d", nil},
		{"${EMPTY:-d}", "d", nil},
		{"${EMPTY}", "", nil},
		{"${UNSET:-}", "", nil},
		{"${UNSET:-a b:c}", "a b:c", nil},
		{"${UNSET:-${B}}", "beta", nil},
		{"${UNSET:-${ALSO_UNSET:-deep}}", "deep", nil},
		{"${UNSET:-$${B}}", "${B}", nil},
		{"${A:-${UNSET}}", "alpha", nil}, // an unused default is not expanded
		{"$$", "$", nil},
		{"$${A}", "${A}", nil},
		{"$$$$", "$$", nil},
		{"$A", "$A", nil},
		{"a$", "a$", nil},
		{"$", "$", nil},
		{"5$ and $ 6", "5$ and $ 6", nil},
		{"${DOLLAR}{A}", "${A}", nil},
		{"${REF}", "${A}", nil}, // values are not expanded again
		{"${_x1}", "${_x1}", []string{"_x1 is not set"}},
		{"${UNSET}", "${UNSET}", []string{"environment variable UNSET is not set: set it, or give a default with ${UNSET:-default}"}},
		{"${U1}${U2}", "${U1}${U2}", []string{"U1 is not set", "U2 is not set"}},
		{"${", "${", []string{"unterminated"}},
		{"x${A", "x${A", []string{"unterminated"}},
		{"${A:-${B}", "${A:-${B}", []string{"unterminated"}},
		{"${}", "${}", []string{"empty reference"}},
		{"${A-B}", "${A-B}", []string{"malformed reference"}},
		{"${A:B}", "${A:B}", []string{"malformed reference"}},
		{"${1A}", "${1A}", []string{"malformed reference"}},
		{"${ A}", "${ A}", []string{"malformed reference"}},
		{"${A }", "${A }", []string{"malformed reference"}},
		{"${A:-${}}", "alpha", []string{"empty reference"}}, // syntax of an unused default is checked
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, errs := expand(tt.in, env)
			if got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(errs) != len(tt.errs) {
				t.Fatalf("expand(%q) problems = %v, want %d", tt.in, errs, len(tt.errs))
			}
			for i, e := range errs {
				if !strings.Contains(e.msg, tt.errs[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, e.msg, tt.errs[i])
				}
			}
		})
	}
}

func TestValidEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"PATH": true, "_": true, "a_1": true, "": false, "1A": false, "A-B": false, "A=B": false, "A B": false, "É": false,
	} {
		if got := validEnvName(name); got != want {
			t.Errorf("validEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}
