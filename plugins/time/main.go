// Command time is a toolhost plugin for the current time, time-zone
// conversion and date arithmetic, with the IANA time-zone database embedded.
//
// Build: cd plugins && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o time.wasm ./time
package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the sandbox has no /usr/share/zoneinfo

	"github.com/toolhost/toolhost/pdk"
)

const timeInput = `"description": "A time: RFC 3339 (2025-03-14T15:09:26Z, 2025-03-14T15:09:26+01:00), \"2025-03-14 15:09[:26]\", \"2025-03-14\", \"15:09\" (today), Unix seconds (1741964966), or \"now\". Without an offset it is read in the timezone argument."`

// timeSchema is the output schema shared by the tools that return one time.
const timeSchema = `{
	"type": "object",
	"properties": {
		"time": {"type": "string", "description": "RFC 3339"},
		"timezone": {"type": "string"},
		"abbreviation": {"type": "string"},
		"utc_offset": {"type": "string"},
		"unix": {"type": "integer"},
		"weekday": {"type": "string"},
		"is_dst": {"type": "boolean"}
	},
	"required": ["time", "timezone", "unix"]
}`

func init() {
	pdk.Register(
		pdk.Tool{
			Name:        "current_time",
			Title:       "Current time",
			Description: "Get the current date and time in a timezone (IANA name such as Europe/Paris; default UTC or the plugin's default_timezone).",
			InputSchema: `{
				"type": "object",
				"properties": {
					"timezone": {"type": "string", "description": "IANA timezone name, e.g. America/New_York. Default UTC."}
				},
				"additionalProperties": false
			}`,
			OutputSchema: timeSchema,
			Annotations:  &pdk.Annotations{ReadOnlyHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:      currentTime,
		},
		pdk.Tool{
			Name:        "convert_time",
			Title:       "Convert time between timezones",
			Description: "Convert a time from one timezone to another, e.g. \"15:00\" in Asia/Tokyo to Europe/Berlin.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"time": {"type": "string", ` + timeInput + `},
					"source_timezone": {"type": "string", "description": "IANA timezone the time is in (ignored when time has an offset). Default UTC."},
					"target_timezone": {"type": "string", "description": "IANA timezone to convert to."}
				},
				"required": ["time", "target_timezone"],
				"additionalProperties": false
			}`,
			OutputSchema: `{
				"type": "object",
				"properties": {"source": ` + timeSchema + `, "target": ` + timeSchema + `, "time_difference": {"type": "string"}},
				"required": ["source", "target", "time_difference"]
			}`,
			Annotations: &pdk.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:     convertTime,
		},
		pdk.Tool{
			Name:  "add_time",
			Title: "Add a duration to a time",
			Description: "Add (or, with a leading '-', subtract) a duration to a time, calendar-aware: " +
				"ISO 8601 (P1Y2M10DT2H30M, P2W) or Go-style (1h30m, -45m, 90s). Days and months follow the calendar and DST of the timezone.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"time": {"type": "string", ` + timeInput + `},
					"duration": {"type": "string", "description": "ISO 8601 duration (P3D, PT90M, -P1M) or Go duration (1h30m, -15m)."},
					"timezone": {"type": "string", "description": "IANA timezone for reading the time and for the result. Default UTC."}
				},
				"required": ["time", "duration"],
				"additionalProperties": false
			}`,
			OutputSchema: timeSchema,
			Annotations:  &pdk.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:      addTime,
		},
		pdk.Tool{
			Name:        "time_between",
			Title:       "Time between two times",
			Description: "Compute the elapsed time from start to end: total seconds, hours and days, and calendar years/months/days.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"start": {"type": "string", ` + timeInput + `},
					"end": {"type": "string", ` + timeInput + `},
					"timezone": {"type": "string", "description": "IANA timezone for times without an offset and for calendar math. Default UTC."}
				},
				"required": ["start", "end"],
				"additionalProperties": false
			}`,
			OutputSchema: `{
				"type": "object",
				"properties": {
					"seconds": {"type": "number"}, "hours": {"type": "number"}, "days": {"type": "number"},
					"calendar": {"type": "object", "properties": {"years": {"type": "integer"}, "months": {"type": "integer"}, "days": {"type": "integer"}, "hours": {"type": "integer"}, "minutes": {"type": "integer"}, "seconds": {"type": "integer"}}},
					"human": {"type": "string"}, "negative": {"type": "boolean"}
				},
				"required": ["seconds", "human"]
			}`,
			Annotations: &pdk.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: pdk.Bool(false)},
			Handler:     timeBetween,
		},
	)
}

// now returns the wall-clock time, or an error when the host gives the
// sandbox a fake clock (wazero's default without WithSysWalltime starts at
// 2022-01-01T00:00:00Z).
func now() (time.Time, error) {
	t := time.Now()
	if t.Before(time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)) {
		return t, errors.New("the host gives this plugin a fake clock (it reads " + t.UTC().Format(time.RFC3339) +
			"); the operator must enable real wall-clock time for the sandbox; pass an explicit time instead of \"now\"")
	}
	return t, nil
}

func location(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name, _ = pdk.Config("default_timezone")
	}
	if name == "" || strings.EqualFold(name, "UTC") || name == "Z" {
		return time.UTC, nil
	}
	if loc, ok := locations[name]; ok {
		return loc, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown timezone %q: use an IANA name such as Europe/London, America/Los_Angeles or UTC", name)
	}
	if len(locations) >= 64 {
		clear(locations)
	}
	locations[name] = loc
	return loc, nil
}

// locations caches loaded zones: reading one from the embedded database
// costs more than the rest of a call. An instance serves one call at a time.
var locations = map[string]*time.Location{}

// parseTime reads s in loc (when s has no offset of its own).
func parseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "now") {
		t, err := now()
		return t.In(loc), err
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", strings.Replace(s, " ", "T", 1)); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04", "3:04PM", "3:04 PM", "3PM", "3 PM"} {
		if c, err := time.Parse(layout, strings.ToUpper(s)); err == nil {
			today, err := now()
			if err != nil {
				return time.Time{}, fmt.Errorf("%q has no date, so it means today, but %v", s, err)
			}
			today = today.In(loc)
			return time.Date(today.Year(), today.Month(), today.Day(), c.Hour(), c.Minute(), c.Second(), 0, loc), nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		switch {
		case n > 1e17 || n < -1e17:
			return time.Unix(0, n).In(loc), nil // nanoseconds
		case n > 1e14 || n < -1e14:
			return time.UnixMicro(n).In(loc), nil
		case n > 1e11 || n < -1e11:
			return time.UnixMilli(n).In(loc), nil
		}
		return time.Unix(n, 0).In(loc), nil
	}
	return time.Time{}, fmt.Errorf("cannot read time %q: use RFC 3339 (2025-03-14T15:09:26Z), \"2025-03-14 15:09\", \"2025-03-14\", \"15:09\", Unix seconds or \"now\"", s)
}

type timeInfo struct {
	Time         string `json:"time"`
	Timezone     string `json:"timezone"`
	Abbreviation string `json:"abbreviation"`
	UTCOffset    string `json:"utc_offset"`
	Unix         int64  `json:"unix"`
	Weekday      string `json:"weekday"`
	IsDST        bool   `json:"is_dst"`
}

func info(t time.Time) timeInfo {
	abbr, _ := t.Zone()
	return timeInfo{
		Time:         t.Format(time.RFC3339),
		Timezone:     t.Location().String(),
		Abbreviation: abbr,
		UTCOffset:    t.Format("-07:00"),
		Unix:         t.Unix(),
		Weekday:      t.Weekday().String(),
		IsDST:        t.IsDST(),
	}
}

func (i timeInfo) String() string {
	return fmt.Sprintf("%s (%s, %s, UTC%s)", i.Time, i.Weekday, i.Timezone, i.UTCOffset)
}

func result(text string, v any) *pdk.Result {
	return &pdk.Result{Content: []pdk.Content{pdk.TextContent(text)}, StructuredContent: v}
}

func currentTime(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Timezone string `json:"timezone"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	loc, err := location(a.Timezone)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	t, err := now()
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	i := info(t.In(loc).Truncate(time.Second))
	return result(i.String(), i), nil
}

func convertTime(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Time   string `json:"time"`
		Source string `json:"source_timezone"`
		Target string `json:"target_timezone"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	src, err := location(a.Source)
	if err != nil {
		return pdk.Errorf("source_timezone: %v", err), nil
	}
	if strings.TrimSpace(a.Target) == "" {
		return pdk.Errorf("target_timezone is required"), nil
	}
	dst, err := location(a.Target)
	if err != nil {
		return pdk.Errorf("target_timezone: %v", err), nil
	}
	t, err := parseTime(a.Time, src)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	from, to := info(t), info(t.In(dst))
	_, o1 := t.Zone()
	_, o2 := t.In(dst).Zone()
	diff := formatOffset(o2 - o1)
	return result(fmt.Sprintf("%s = %s (target is %s relative to source)", from, to, diff),
		map[string]any{"source": from, "target": to, "time_difference": diff}), nil
}

func formatOffset(sec int) string {
	sign := "+"
	if sec < 0 {
		sign, sec = "-", -sec
	}
	h, m := sec/3600, sec%3600/60
	if m == 0 {
		return fmt.Sprintf("%s%dh", sign, h)
	}
	return fmt.Sprintf("%s%dh%02dm", sign, h, m)
}

func addTime(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Time     string `json:"time"`
		Duration string `json:"duration"`
		Timezone string `json:"timezone"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	loc, err := location(a.Timezone)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	t, err := parseTime(a.Time, loc)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	if strings.TrimSpace(a.Timezone) != "" {
		t = t.In(loc)
	}
	d, err := parseDuration(a.Duration)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	r := d.addTo(t)
	i := info(r)
	return result(fmt.Sprintf("%s + %s = %s", t.Format(time.RFC3339), strings.TrimSpace(a.Duration), i), i), nil
}

// duration is a calendar-aware span: the date part moves with AddDate, the
// clock part is exact.
type duration struct {
	years, months, days int
	clock               time.Duration
}

func (d duration) addTo(t time.Time) time.Time {
	return t.AddDate(d.years, d.months, d.days).Add(d.clock)
}

func parseDuration(s string) (duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return duration{}, errors.New("duration is empty")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	var d duration
	if len(s) > 0 && (s[0] == 'P' || s[0] == 'p') {
		var err error
		if d, err = parseISO(strings.ToUpper(s[1:])); err != nil {
			return duration{}, fmt.Errorf("duration %q: %v", s, err)
		}
	} else {
		c, err := time.ParseDuration(s)
		if err != nil {
			return duration{}, fmt.Errorf("cannot read duration %q: use ISO 8601 (P1DT2H, PT30M, P2W) or Go style (1h30m, 45s)", s)
		}
		d.clock = c
	}
	if neg {
		d = duration{-d.years, -d.months, -d.days, -d.clock}
	}
	return d, nil
}

// parseISO reads the part of an ISO 8601 duration after "P".
func parseISO(s string) (duration, error) {
	var d duration
	inTime, seen := false, false
	for len(s) > 0 {
		if s[0] == 'T' {
			inTime = true
			s = s[1:]
			continue
		}
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',') {
			i++
		}
		if i == 0 || i == len(s) {
			return d, errors.New("expected a number followed by a unit (Y, M, W, D, H, M, S)")
		}
		num, err := strconv.ParseFloat(strings.Replace(s[:i], ",", ".", 1), 64)
		if err != nil {
			return d, err
		}
		unit := s[i]
		s = s[i+1:]
		seen = true
		whole := num == math.Trunc(num)
		switch {
		case !inTime && unit == 'Y' && whole:
			d.years += int(num)
		case !inTime && unit == 'M' && whole:
			d.months += int(num)
		case !inTime && unit == 'W' && whole:
			d.days += 7 * int(num)
		case !inTime && unit == 'D' && whole:
			d.days += int(num)
		case inTime && unit == 'H':
			d.clock += time.Duration(num * float64(time.Hour))
		case inTime && unit == 'M':
			d.clock += time.Duration(num * float64(time.Minute))
		case inTime && unit == 'S':
			d.clock += time.Duration(num * float64(time.Second))
		default:
			return d, fmt.Errorf("unexpected %q (fractions are allowed only for H, M, S after T)", string(unit))
		}
	}
	if !seen {
		return d, errors.New("no components")
	}
	return d, nil
}

func timeBetween(c *pdk.Call) (*pdk.Result, error) {
	var a struct {
		Start    string `json:"start"`
		End      string `json:"end"`
		Timezone string `json:"timezone"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	loc, err := location(a.Timezone)
	if err != nil {
		return pdk.Errorf("%v", err), nil
	}
	start, err := parseTime(a.Start, loc)
	if err != nil {
		return pdk.Errorf("start: %v", err), nil
	}
	end, err := parseTime(a.End, loc)
	if err != nil {
		return pdk.Errorf("end: %v", err), nil
	}
	start, end = start.In(loc), end.In(loc)
	d := end.Sub(start)
	neg := d < 0
	lo, hi := start, end
	if neg {
		lo, hi = end, start
	}
	y, mo, dd, h, mi, sec := calendarDiff(lo, hi)
	human := humanize(y, mo, dd, h, mi, sec)
	if neg {
		human = "-" + human + " (end is before start)"
	}
	return result(fmt.Sprintf("%s (%.0f seconds, %.2f hours, %.2f days)", human, d.Seconds(), d.Hours(), d.Hours()/24), map[string]any{
		"seconds": d.Seconds(), "hours": d.Hours(), "days": d.Hours() / 24,
		"calendar": map[string]int{"years": y, "months": mo, "days": dd, "hours": h, "minutes": mi, "seconds": sec},
		"human":    human, "negative": neg,
	}), nil
}

// calendarDiff splits hi-lo (lo <= hi) into calendar units.
func calendarDiff(lo, hi time.Time) (y, mo, d, h, mi, s int) {
	months := (hi.Year()-lo.Year())*12 + int(hi.Month()-lo.Month())
	if lo.AddDate(0, months, 0).After(hi) {
		months--
	}
	cur := lo.AddDate(0, months, 0)
	days := 0
	for !cur.AddDate(0, 0, days+1).After(hi) {
		days++
	}
	rest := hi.Sub(cur.AddDate(0, 0, days))
	return months / 12, months % 12, days, int(rest.Hours()), int(rest.Minutes()) % 60, int(rest.Seconds()) % 60
}

func humanize(vals ...int) string {
	names := []string{"year", "month", "day", "hour", "minute", "second"}
	var parts []string
	for i, v := range vals {
		if v != 0 {
			p := fmt.Sprintf("%d %s", v, names[i])
			if v != 1 {
				p += "s"
			}
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "0 seconds"
	}
	return strings.Join(parts, ", ")
}

func main() {}
