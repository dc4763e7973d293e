//go:build !wasip1

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/pdk/pdktest"
)

func TestTools(t *testing.T) {
	pdktest.Reset()
	for _, tt := range []struct {
		tool, args string
		isError    bool
		want       string // substring of the text
	}{
		{"convert_time", `{"time":"2025-07-01 09:30","source_timezone":"Europe/Berlin","target_timezone":"America/Los_Angeles"}`, false, "= 2025-07-01T00:30:00-07:00"},
		{"convert_time", `{"time":"2025-07-01T09:30:00Z","target_timezone":"Asia/Kolkata"}`, false, "(target is +5h30m relative to source)"},
		{"convert_time", `{"time":"1751362200","target_timezone":"UTC"}`, false, "2025-07-01T09:30:00Z"},
		{"convert_time", `{"time":"2025-07-01 09:30","target_timezone":"Nowhere/City"}`, true, "unknown timezone"},
		{"convert_time", `{"time":"yesterday-ish","target_timezone":"UTC"}`, true, "cannot read time"},
		{"add_time", `{"time":"2025-01-31","duration":"P1M"}`, false, "= 2025-03-03T00:00:00Z"},
		{"add_time", `{"time":"2025-11-01T12:00:00","duration":"P1D","timezone":"America/New_York"}`, false, "= 2025-11-02T12:00:00-05:00"},
		{"add_time", `{"time":"2025-11-01T12:00:00","duration":"24h","timezone":"America/New_York"}`, false, "= 2025-11-02T11:00:00-05:00"},
		{"add_time", `{"time":"2025-01-01T00:00:00Z","duration":"-P1W2DT1.5H"}`, false, "= 2024-12-22T22:30:00Z"},
		{"add_time", `{"time":"2025-01-01","duration":"P1.5D"}`, true, "fractions are allowed only"},
		{"add_time", `{"time":"2025-01-01","duration":"soon"}`, true, "cannot read duration"},
		{"time_between", `{"start":"2025-01-01","end":"2025-03-15T12:00:00Z"}`, false, "2 months, 14 days, 12 hours"},
		{"time_between", `{"start":"2025-03-15","end":"2025-01-01"}`, false, "(end is before start)"},
	} {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			out, err := pdktest.CallTool(tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if out.IsError != tt.isError || !strings.Contains(out.Text, tt.want) {
				t.Errorf("isError=%v %q, want isError=%v containing %q", out.IsError, out.Text, tt.isError, tt.want)
			}
		})
	}
}

func TestCurrentTime(t *testing.T) {
	pdktest.Reset()
	pdktest.SetConfig(map[string]string{"default_timezone": "Asia/Tokyo"})
	out, err := pdktest.CallTool("current_time", nil)
	if err != nil || out.IsError {
		t.Fatalf("%v %s", err, out.Raw)
	}
	if !strings.Contains(out.Text, "Asia/Tokyo, UTC+09:00") || !strings.Contains(out.Text, time.Now().In(time.FixedZone("", 9*3600)).Format("2006-01-02")) {
		t.Errorf("got %q", out.Text)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]duration{
		"P1Y2M3DT4H5M6S": {1, 2, 3, 4*time.Hour + 5*time.Minute + 6*time.Second},
		"PT0,5S":         {clock: 500 * time.Millisecond},
		"-1h":            {clock: -time.Hour},
		"p2w":            {days: 14},
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"P", "PT", "P1H", "PT1D", "P1", ""} {
		if _, err := parseDuration(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
