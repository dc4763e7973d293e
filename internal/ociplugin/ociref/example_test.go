package ociref_test

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/internal/ociplugin/ociref"
)

func ExampleParse() {
	r, _ := ociref.Parse("oci://ghcr.io/tuananh/time-plugin:1.0")
	fmt.Println(r.Registry, r.Repository, r.Tag, r.PlainHTTP)
	r, _ = ociref.Parse("oci+http://127.0.0.1:5000/plugins/echo:dev")
	fmt.Println(r.Name(), r.PlainHTTP)
	_, err := ociref.Parse("oci+http://registry.example.com/plugins/echo:dev")
	fmt.Println(errors.Is(err, ociref.ErrRef))
	// Output:
	// ghcr.io tuananh/time-plugin 1.0 false
	// 127.0.0.1:5000/plugins/echo:dev true
	// true
}
