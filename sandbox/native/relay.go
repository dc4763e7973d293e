package native

import (
	"errors"
	"net"
	"os"

	"github.com/hashicorp/go-hclog"
)

// relay carries one start's allowed egress: the proxy at ProxyAddr and
// the transparent forwards, each a listener inside the server's network
// namespace that toolhost accepts on. STUB: replaced by the egress part.
type relay struct{}

// newRelay plans the egress of a server allowed hosts (nil: no network).
func newRelay(hosts []string, logger hclog.Logger, d *denials) (*relay, error) { return &relay{}, nil }

// listen returns the addresses the child binds inside its namespace
// (nsinit.Config.Listen), in order; empty when the server has no network.
func (r *relay) listen() []string { return nil }

// files returns the generated files of the server's /etc (hosts,
// resolv.conf) as guest path → content.
func (r *relay) files() map[string]string { return nil }

// env returns the variables added to the server's environment
// (HTTP_PROXY and the like).
func (r *relay) env() []string { return nil }

// serve relays connections accepted on lns (one per listen() address, in
// order) until close.
func (r *relay) serve(lns []net.Listener) {}

// close stops accepting, closes every relayed connection and waits for
// the relay's goroutines.
func (r *relay) close() {}

// receiveListeners receives the n listening sockets the child sends on
// sock (SCM_RIGHTS). STUB: replaced by the egress part.
func receiveListeners(sock *os.File, n int) ([]net.Listener, error) {
	return nil, errors.New("native: receiving listeners is not implemented yet")
}
