package host_test

import (
	"context"
	"fmt"

	"github.com/toolhost/toolhost/host"
)

// An error's kind, and the HTTP status the REST API answers it with, are
// found by errors.Is through any wrapping.
func ExampleErrorKind() {
	for _, err := range []error{
		fmt.Errorf("fx__echo: %w", host.ErrTimeout),
		fmt.Errorf("fx__echo: %w: %w", host.ErrBackendUnavailable, host.ErrBackendDisabled),
		&host.ToolDisabledError{Name: "fx__echo"},
		fmt.Errorf("fx__echo: %w", context.Canceled),
		// A required backend whose last start timed out: unavailable,
		// not this call's timeout.
		fmt.Errorf("fx__echo: %w: %w", host.ErrRequiredBackend, fmt.Errorf("start: %w", context.DeadlineExceeded)),
	} {
		kind := host.ErrorKind(err)
		fmt.Println(kind, host.HTTPStatus(kind))
	}
	// Output:
	// timeout 504
	// disabled 409
	// disabled 409
	// canceled 499
	// backend_unavailable 503
}
