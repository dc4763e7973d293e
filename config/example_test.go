package config_test

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/config"
)

func ExampleParse() {
	src := []byte(`
[servers.everything]
command = "npx"
args    = ["-y", "@modelcontextprotocol/server-everything"]
env     = { API_KEY = "${EVERYTHING_KEY}" }

[plugins.fetch]
path          = "plugins/fetch.wasm"
allowed_hosts = ["*.wikipedia.org"]
memory        = "64MiB"
`)
	env := map[string]string{"EVERYTHING_KEY": "k-123"}
	cfg, err := config.Parse(src, &config.Options{
		Name:      "toolhost.toml",
		Dir:       "/etc/toolhost",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Backends())
	fmt.Println(cfg.Servers["everything"].Env["API_KEY"], cfg.Host.CallTimeout)
	p := cfg.Plugins["fetch"]
	fmt.Println(p.Path, p.Memory, p.Isolation)
	// Output:
	// [everything fetch]
	// k-123 30s
	// /etc/toolhost/plugins/fetch.wasm 64MiB pooled
}

func ExampleErrorList() {
	src := []byte(`
[servers.everything]
comand = "npx"

[plugins.fetch]
path   = "fetch.wasm"
memory = "100KB"
`)
	_, err := config.Parse(src, &config.Options{Name: "toolhost.toml", Dir: "/etc/toolhost"})
	fmt.Println(err)

	var e *config.Error
	if errors.As(err, &e) {
		fmt.Printf("first: line %d, key %s\n", e.Line, e.Key)
	}
	// Output:
	// toolhost.toml:3: servers.everything.comand: unknown key: did you mean "command"?
	// toolhost.toml:7: plugins.fetch.memory: 100000 bytes is not a multiple of 64KiB (the WebAssembly page size): use "128KiB"
	// first: line 3, key servers.everything.comand
}
