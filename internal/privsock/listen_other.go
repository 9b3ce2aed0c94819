//go:build !unix

package privsock

import "net"

// Listen listens on a unix socket at path; its mode is the system's.
func Listen(path string) (net.Listener, error) { return net.Listen("unix", path) }
