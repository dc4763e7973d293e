//go:build !linux

package native

import (
	"fmt"
	"os/exec"

	"github.com/toolhost/toolhost/transport"
)

func (l *Launcher) launch(cmd *exec.Cmd) (transport.Launched, error) {
	return nil, permanent(fmt.Errorf("%w: the native sandbox needs Linux", ErrUnavailable))
}
