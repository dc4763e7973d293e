package native

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	probeOnce sync.Once
	probed    Mechanisms
	// probe is Probe; tests replace it to simulate a kernel without a
	// mechanism.
	probe = Probe
)

// Probe reports the mechanisms this kernel and process offer; the result
// is computed once per process:
//
//   - UserNS: /proc/sys/user/max_user_namespaces is above 0 and, where the
//     Debian knob /proc/sys/kernel/unprivileged_userns_clone exists, it is
//     1 or the process has CAP_SYS_ADMIN (user_namespaces(7));
//   - Landlock: the ABI version landlock_create_ruleset(2) reports with
//     LANDLOCK_CREATE_RULESET_VERSION (0: none);
//   - Seccomp: prctl(PR_GET_SECCOMP) succeeds (the kernel has
//     CONFIG_SECCOMP; seccomp(2));
//   - Cgroup: "v2" or "v1" when toolhost can create cgroups there (see
//     the limits part), else "".
func Probe() Mechanisms {
	probeOnce.Do(func() {
		probed = Mechanisms{
			UserNS:   probeUserNS(),
			Landlock: probeLandlock(),
			Seccomp:  probeSeccomp(),
			Cgroup:   probeCgroup(),
		}
	})
	return probed
}

func probeUserNS() bool {
	if n, ok := readInt("/proc/sys/user/max_user_namespaces"); ok && n == 0 {
		return false
	}
	if n, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 && !hasCapSysAdmin() {
		return false
	}
	_, err := os.Stat("/proc/self/ns/user")
	return err == nil
}

func readInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}
