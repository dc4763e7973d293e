package nsinit

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// listenBacklog is the backlog of each egress listener (listen(2); the
// kernel caps it at net.core.somaxconn).
const listenBacklog = 4096

// setupNetwork brings lo up (c.LoopbackUp) and binds c.Listen, sending the
// listening sockets to the parent on ListenFD in one SCM_RIGHTS message (in
// order, with one data byte) and closing them here; ListenFD is marked
// close-on-exec, so the server inherits neither. It runs in the server's
// new network namespace, which has only its loopback, down: bringing it up
// needs CAP_NET_ADMIN there, and binding a port below 1024 (the forwards'
// 80 and 443) CAP_NET_BIND_SERVICE. Errors name the step and the address.
func setupNetwork(c *Config) error {
	if c.LoopbackUp {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if len(c.Listen) == 0 {
		return nil
	}
	fds := make([]int, 0, len(c.Listen))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, a := range c.Listen {
		fd, err := listenTCP(a)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	if err := unix.Sendmsg(ListenFD, []byte{0}, unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("sending the egress listeners to toolhost: %w", err)
	}
	unix.CloseOnExec(ListenFD)
	return nil
}

// loopbackUp sets IFF_UP on lo (netdevice(7): SIOCGIFFLAGS, SIOCSIFFLAGS).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing lo up: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// listenTCP binds and listens on addr ("127.0.0.1:3128", "[::1]:8081"),
// returning a close-on-exec socket. An IPv6 socket is IPv6-only.
func listenTCP(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, fmt.Errorf("egress listener %q: %w", addr, err)
	}
	ip := ap.Addr().Unmap()
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ip.Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("egress listener %s: socket: %w", addr, err)
	}
	fail := func(step string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("egress listener %s: %s: %w", addr, step, err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return fail("IPV6_V6ONLY", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("SO_REUSEADDR", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, listenBacklog); err != nil {
		return fail("listen", err)
	}
	return fd, nil
}
