package guard

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// Listener returns ln serving its connections in two pools, so that
// nobody who can reach it can lock out the holders of its token
// (docs/security.md#listeners):
//
//   - A connection is unauthenticated from its accept until a request on
//     it passes the guard's token check (Handler). A client certificate
//     alone does not authenticate it: every request must carry the token
//     anyway, and one rule holds for every listener. An unauthenticated
//     connection has l.AuthTimeout for its TLS handshake and its first
//     request, headers included, and is closed past it. At most
//     l.MaxUnauthenticated are open at once; see admit for the next.
//   - A connection that passed the token check holds one of l.MaxConns
//     slots while it serves a request, and none while it is kept alive
//     between two: idle connections cost a client's next requests nothing
//     but keep no one else out. At most l.MaxIdle are kept; past it, the
//     one idle the longest is closed. A request that passes the token
//     check while every slot serves one waits for one, at most
//     l.AuthTimeout, then is answered 503.
//
// Each listener has its own pools: a flood on a TCP port leaves the
// owner's unix socket free. Server makes the server that tells Handler
// which connection a request came on.
func Listener(ln net.Listener, l Limits) net.Listener {
	l = l.withDefaults()
	return &limited{Listener: ln, lim: l, changed: make(chan struct{})}
}

// Unwrap is the listener l guards.
func (l *limited) Unwrap() net.Listener { return l.Listener }

type limited struct {
	net.Listener
	lim Limits

	mu      sync.Mutex
	unauth  []*conn       // the unauthenticated connections, oldest first
	idle    []*conn       // the authenticated connections kept alive between requests, oldest first
	used    int           // the slots held: one by each request under way that passed the token check
	changed chan struct{} // closed, and replaced, when a slot frees
}

// The states of a conn, under its listener's mu.
const (
	unauthenticated = iota
	authenticated   // a request on it passed the token check
	closed
)

// conn is a connection of a limited listener.
type conn struct {
	net.Conn
	l       *limited
	group   string      // its remote address's group, for admit
	expires *time.Timer // closes it if still unauthenticated

	state int  // under l.mu
	holds bool // under l.mu: it holds a slot, for the request it serves
}

func (l *limited) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, l: l, group: group(nc.RemoteAddr())}
	l.mu.Lock()
	victim := l.admit(c)
	// Under mu, so that expire and Close find the timer set.
	c.expires = time.AfterFunc(l.lim.AuthTimeout, c.expire)
	l.mu.Unlock()
	if victim != nil {
		victim.expires.Stop()
		victim.Conn.Close()
	}
	return c, nil
}

// admit adds c to the unauthenticated connections. When they are
// l.MaxUnauthenticated already, it takes one out to make room and returns
// it, for the caller to close: the oldest of those from the remote
// address (see group) that holds the most.
//
// Why evict, rather than make the newcomer wait: a listener that stops
// accepting while its pool is full leaves a legitimate client behind
// every connection a flood queues in the kernel, and the flood refills
// the pool as fast as connections time out. Evicting keeps accept
// immediate, so a fresh connection always gets in, and it lives until
// l.MaxUnauthenticated newer ones arrive, far longer than a client that
// holds the token needs to send it. Why the address holding the most,
// rather than a cap per address: a cap refuses a legitimate client that
// shares its address with the flood (on loopback, everyone does), while
// this choice spares a client from any other address entirely as long
// as one address floods, and is plain eviction of the oldest when every
// address holds as many (loopback, or a flood from many addresses).
func (l *limited) admit(c *conn) (victim *conn) {
	if len(l.unauth) >= l.lim.MaxUnauthenticated {
		count := map[string]int{}
		most := 0
		for _, u := range l.unauth {
			count[u.group]++
			most = max(most, count[u.group])
		}
		for i, u := range l.unauth {
			if count[u.group] == most {
				victim = u
				l.unauth = append(l.unauth[:i], l.unauth[i+1:]...)
				victim.state = closed
				break
			}
		}
	}
	l.unauth = append(l.unauth, c)
	return victim
}

// group is the part of a remote address that one party holds: an IPv4
// address, an IPv6 /64 (the least a site is given), or the whole address
// of another network (a unix socket's peers share one).
func group(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		if a == nil {
			return ""
		}
		return a.String()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String()
}

// dropUnauth takes c out of the unauthenticated connections; under mu.
func (l *limited) dropUnauth(c *conn) {
	for i, u := range l.unauth {
		if u == c {
			l.unauth = append(l.unauth[:i], l.unauth[i+1:]...)
			return
		}
	}
}

// expire closes c if it is still unauthenticated.
func (c *conn) expire() {
	c.l.mu.Lock()
	if c.state != unauthenticated {
		c.l.mu.Unlock()
		return
	}
	c.l.dropUnauth(c)
	c.state = closed
	c.l.mu.Unlock()
	c.Conn.Close()
}

// Close closes the connection and gives back what it holds, once.
func (c *conn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch c.state {
	case unauthenticated:
		l.dropUnauth(c)
		c.expires.Stop()
	case authenticated:
		l.dropIdle(c)
		if c.holds {
			l.free()
		}
	}
	c.state, c.holds = closed, false
	return err
}

// free gives a slot back; under mu.
func (l *limited) free() {
	l.used--
	close(l.changed)
	l.changed = make(chan struct{})
}

// dropIdle takes c out of the idle connections; under mu.
func (l *limited) dropIdle(c *conn) {
	for i, a := range l.idle {
		if a == c {
			l.idle = append(l.idle[:i], l.idle[i+1:]...)
			return
		}
	}
}

// setIdle notes that c, once authenticated, serves a request (idle
// false) or is kept alive between two (idle true): its request is done,
// and its slot free. Past MaxIdle idle connections, the one idle the
// longest is closed.
func (c *conn) setIdle(idle bool) {
	l := c.l
	l.mu.Lock()
	if c.state != authenticated {
		l.mu.Unlock()
		return
	}
	if !idle {
		l.dropIdle(c)
		l.mu.Unlock()
		return
	}
	if c.holds {
		c.holds = false
		l.free()
	}
	l.idle = append(l.idle, c)
	var victim *conn
	if len(l.idle) > l.lim.MaxIdle {
		victim = l.idle[0]
		l.idle = l.idle[1:]
		victim.state = closed
	}
	l.mu.Unlock()
	if victim != nil {
		victim.Conn.Close()
	}
}

// authenticate notes that a request on c passed the token check, and
// takes a slot for it, waiting at most AuthTimeout, or until ctx ends. It
// reports whether c holds one.
func (c *conn) authenticate(ctx context.Context) bool {
	l := c.l
	l.mu.Lock()
	switch c.state {
	case closed:
		l.mu.Unlock()
		return false
	case unauthenticated:
		// Its token is good: no longer to be evicted or expired.
		l.dropUnauth(c)
		c.expires.Stop()
		c.state = authenticated
	}
	if c.holds {
		l.mu.Unlock()
		return true
	}
	l.mu.Unlock()
	if !c.takeSlot(ctx) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.state == closed { // meanwhile
		l.free()
		return false
	}
	c.holds = true
	return true
}

// takeSlot takes a free slot, or waits for one, at most AuthTimeout, or
// until ctx ends.
func (c *conn) takeSlot(ctx context.Context) bool {
	l := c.l
	var timeout <-chan time.Time
	for {
		l.mu.Lock()
		if l.used < l.lim.MaxConns {
			l.used++
			l.mu.Unlock()
			return true
		}
		changed := l.changed
		l.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(l.lim.AuthTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		case <-timeout:
			return false
		}
	}
}

// connKey is the request context's key of the connection it came on, as
// Server's ConnContext put it there.
type connKey struct{}

// connOf returns the limited connection a request came on: nil when its
// listener was not made by Listener.
func connOf(ctx context.Context) *conn {
	nc, _ := ctx.Value(connKey{}).(net.Conn)
	return unwrap(nc)
}

// unwrap returns the limited connection under nc: nil when its listener
// was not made by Listener.
func unwrap(nc net.Conn) *conn {
	for nc != nil {
		switch c := nc.(type) {
		case *conn:
			return c
		case *tls.Conn:
			nc = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}
