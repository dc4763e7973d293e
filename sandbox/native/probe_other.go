//go:build !linux

package native

func probeLandlock() int   { return 0 }
func probeSeccomp() bool   { return false }
func hasCapSysAdmin() bool { return false }
