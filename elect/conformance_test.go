package elect_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/elect/electtest"
)

// TestConformance runs the election suite against the file backend, on
// real time, a real directory and real listeners (contenders probe the
// leader's address).
func TestConformance(t *testing.T) {
	const (
		// renew is also every read's and write's deadline on the share:
		// a loaded machine's fsyncs took more than 200 ms.
		ttl   = 1500 * time.Millisecond
		renew = 400 * time.Millisecond
		poll  = 100 * time.Millisecond
	)
	electtest.Run(t, electtest.Kit{
		TTL:      ttl,
		Handover: poll,
		Election: func(t *testing.T) func(string) elect.Backend {
			dir := t.TempDir()
			return func(host string) elect.Backend {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				t.Cleanup(func() { ln.Close() })
				e, err := elect.New(elect.Config{Dir: dir, Instance: "conformance", HostID: host,
					Address: ln.Addr().String(), TTL: ttl, Renew: renew, Poll: poll, LockStale: time.Second})
				require.NoError(t, err)
				t.Cleanup(e.Close)
				return e.Backend()
			}
		},
	})
}
