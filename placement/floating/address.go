package floating

import (
	"net"
	"path/filepath"

	"github.com/graftland/graft/spec"
)

// Dir is the election's directory: elect.dir, relative to the spec's
// directory specDir.
func Dir(specDir string, e *spec.Elect) string {
	if filepath.IsAbs(e.Dir) {
		return e.Dir
	}
	return filepath.Join(specDir, e.Dir)
}

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
