module github.com/toolhost/toolhost/pdk

go 1.24
