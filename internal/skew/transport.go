package skew

import "net/http"

// Transport is next, sending self's headers with every request, and
// calling heard, when set, with the peer of every answer that names one.
// It is the one way graft's clients (hostapi's, runtime/remote's) say
// who they are. It passes CloseIdleConnections on to next.
func Transport(next http.RoundTripper, self Peer, heard func(Peer)) http.RoundTripper {
	return &transport{next: next, self: self, heard: heard}
}

type transport struct {
	next  http.RoundTripper
	self  Peer
	heard func(Peer)
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper leaves its request as it came
	t.self.Set(req.Header)
	resp, err := t.next.RoundTrip(req)
	if err == nil && t.heard != nil {
		if p, perr := Of(resp.Header); perr == nil {
			t.heard(p)
		}
	}
	return resp, err
}

// CloseIdleConnections closes next's idle connections, as
// http.Client.CloseIdleConnections asks of its transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
