module github.com/toolhost/toolhost/testdata/plugins

go 1.26
