package hostapi

import (
	"github.com/graftland/graft/internal/skew"
)

// Protocol is the number of the host API's protocol that this graft
// speaks, from 1: every request of a Client carries it, with graft's
// version, and so does every answer of a host (docs/architecture.md,
// "Version skew"). It grows by one with each change to what a client
// may send that a host of the previous protocol would not understand (a
// field, a route, a parameter, a new meaning), so that such a host
// refuses the request, naming both versions, rather than misread it.
const Protocol = 1

// self is what a Client says of itself.
func self() skew.Peer { return skew.Peer{Version: skew.Version(), Protocol: Protocol} }

// Host is the graft version and the protocol of the host, as its last
// answer said them; false until an answer has (a host from before
// protocols says nothing).
func (c *Client) Host() (skew.Peer, bool) {
	p := c.host.Load()
	if p == nil {
		return skew.Peer{}, false
	}
	return *p, true
}

// heard keeps the host's peer of an answer.
func (c *Client) heard(p skew.Peer) { c.host.Store(&p) }
