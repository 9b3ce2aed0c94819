package testsupport

import "net"

// FreeAddr is a loopback TCP address, 127.0.0.1:PORT, that nothing
// listens on: a port the kernel just handed out, closed again at once.
func FreeAddr(t TB) string {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("a free loopback port: %v", err)
		return ""
	}
	defer ln.Close()
	return ln.Addr().String()
}
