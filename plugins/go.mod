module github.com/toolhost/toolhost/plugins

go 1.25.0

require (
	github.com/JohannesKaufmann/html-to-markdown/v2 v2.5.2
	github.com/dop251/goja v0.0.0-20260917113740-793a2a65c13b
	github.com/itchyny/gojq v0.12.20
	github.com/toolhost/toolhost/pdk v0.0.0
	golang.org/x/net v0.55.0
)

require (
	github.com/JohannesKaufmann/dom v0.3.1 // indirect
	github.com/dlclark/regexp2/v2 v2.5.2 // indirect
	github.com/go-sourcemap/sourcemap v2.1.3+incompatible // indirect
	github.com/google/pprof v0.0.0-20230207041349-798e818bf904 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	golang.org/x/text v0.37.0 // indirect
)

replace github.com/toolhost/toolhost/pdk => ../pdk
