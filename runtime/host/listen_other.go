//go:build !unix

package host

import "net"

func listenPrivate(path string) (net.Listener, error) { return net.Listen("unix", path) }
