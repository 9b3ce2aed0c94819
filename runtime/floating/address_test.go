package floating

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// TestPickAddress: the default prefers a private range to a public one
// and never publishes loopback or link-local; a network or an
// interface's name picks among theirs; what matches nothing is an error
// that names it. (The interfaces are listed here: a machine with just
// these cannot be made in a test; TestPublishAddressInNetNS runs the
// real lookup.)
func TestPickAddress(t *testing.T) {
	ifs := []ifaceAddrs{
		{name: "lo", addrs: addrs("127.0.0.1", "::1")},
		{name: "eth0", addrs: addrs("fe80::1", "203.0.113.7", "2001:db8::7")},
		{name: "eth1", addrs: addrs("169.254.0.9", "192.168.4.2", "fd00::2")},
	}
	for _, c := range []struct{ prefer, want string }{
		{"", "192.168.4.2"},
		{"203.0.113.0/24", "203.0.113.7"},
		{"2001:db8::/32", "2001:db8::7"},
		{"eth0", "203.0.113.7"},
		{"lo", "127.0.0.1"}, // named: loopback is what was asked for
	} {
		got, err := pickAddress(ifs, c.prefer)
		require.NoError(t, err, c.prefer)
		assert.Equal(t, c.want, got.String(), c.prefer)
	}
	got, err := pickAddress(ifs[:2], "")
	require.NoError(t, err)
	assert.Equal(t, "203.0.113.7", got.String(), "a public one when no private one")

	_, err = pickAddress(ifs[:1], "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no address of this machine to publish but loopback")
	_, err = pickAddress(ifs, "10.0.0.0/8")
	assert.EqualError(t, err, "elect.address 10.0.0.0/8: no address of this machine is in that network")
	_, err = pickAddress(ifs, "wlan0")
	assert.EqualError(t, err, "elect.address wlan0: no interface of this machine has that name (a host name needs a port: HOST:PORT)")
}
