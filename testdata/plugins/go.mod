module github.com/toolhost/toolhost/testdata/plugins

go 1.26

require github.com/toolhost/toolhost/pdk v0.0.0

replace github.com/toolhost/toolhost/pdk => ../../pdk
