// Package units formats the byte counts toolhost's messages name, in the
// binary units of its configuration keys (memory = "256MiB").
package units

import "strconv"

// Bytes formats n bytes in the largest binary unit that divides it
// ("256MiB", "3KiB", "1000B"; "0B" for 0): the form config.Size reads, so a
// message can name a value the user can paste back into the key.
func Bytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
