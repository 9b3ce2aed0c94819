package floating

import (
	"net"
)

// localAddress is this machine's address for others to reach: the first
// non-loopback IPv4 address, else loopback.
func localAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	return "127.0.0.1"
}
