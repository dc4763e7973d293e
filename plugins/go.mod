module github.com/toolhost/toolhost/plugins

go 1.25.0

require (
	github.com/JohannesKaufmann/html-to-markdown/v2 v2.5.2
	github.com/itchyny/gojq v0.12.20
	github.com/toolhost/toolhost/pdk v0.0.0
	golang.org/x/net v0.55.0
)

require (
	github.com/JohannesKaufmann/dom v0.3.1 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
)

replace github.com/toolhost/toolhost/pdk => ../pdk
