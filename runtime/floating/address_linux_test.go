package floating

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/spec"
)

// TestPublishAddressInNetNS: on a machine whose only interface is lo
// with 127.0.0.1 and 10.77.0.1 (a network namespace of the test's own),
// the default publishes 10.77.0.1, and so do its network and lo named;
// HOST:PORT is published as written.
func TestPublishAddressInNetNS(t *testing.T) {
	if !testsupport.InNetNS(t) {
		return
	}
	beyond := testsupport.Beyond.String()
	for _, c := range []struct {
		address, want string
	}{
		{"", net.JoinHostPort(beyond, "9530")},
		{"10.77.0.0/16", net.JoinHostPort(beyond, "9530")},
		{"lo", net.JoinHostPort(beyond, "9530")},
		{"127.0.0.1:7000", "127.0.0.1:7000"},
		{"relay.internal:7000", "relay.internal:7000"},
	} {
		got, err := publishAddress(&spec.Elect{Address: c.address, Port: 9530})
		require.NoError(t, err, c.address)
		assert.Equal(t, c.want, got, c.address)
	}
}
