package host_test

import (
	"fmt"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/host"
)

// ExampleServerSandbox maps a sandboxed server's table to the native
// sandbox's Spec; spec.Plan() is then what toolhost check prints and the
// host runs.
func ExampleServerSandbox() {
	cfg, err := config.Parse([]byte(`
[servers.files]
command = "/usr/bin/env"
sandbox = "strict"
allowed_paths = { "/work" = "rw:/srv/work", "/docs" = "/usr/share/doc" }
allowed_hosts = ["registry.npmjs.org"]
memory = "512MiB"
pids = 128
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, sandboxed, err := host.ServerSandbox(cfg, "files")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sandboxed, spec.Mode, spec.Command, spec.Hosts, spec.Memory>>20, "MiB", spec.Pids, "pids")
	for _, m := range spec.Mounts {
		fmt.Println(m.Guest, m.Mode, m.Host)
	}
	// Output:
	// true strict /usr/bin/env [registry.npmjs.org] 512 MiB 128 pids
	// /docs ro /usr/share/doc
	// /work rw /srv/work
}
