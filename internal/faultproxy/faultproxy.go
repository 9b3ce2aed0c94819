// Package faultproxy is a TCP proxy on loopback for tests that break the
// network for real: it forwards connections to a target until it is told
// to go dark, and then keeps every connection open and drops what flows
// either way, as a network that went dark does (no reset, no close).
package faultproxy

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards loopback TCP connections to a target.
type Proxy struct {
	ln     net.Listener
	target string
	dark   atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// New starts a proxy to target (host:port); the test's end closes it and
// every connection through it.
func New(t testing.TB, target string) *Proxy {
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Start starts a proxy to target (host:port), for a program that closes
// it itself.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where the proxy listens, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Dark drops everything from now on; Light forwards again (connections
// that went dark stay broken: their streams lost bytes).
func (p *Proxy) Dark()  { p.dark.Store(true) }
func (p *Proxy) Light() { p.dark.Store(false) }

// Cut closes every connection open now, both ways, as a peer that went
// away does; new ones are forwarded.
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(up)
		p.wg.Add(1)
		go p.forward(c, up)
	}
}

// pipe copies src to dst while the network is up; dark, it reads and
// drops.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.dark.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !p.dark.Load() {
				dst.Close()
			}
			return
		}
	}
}

// forward copies both ways until both copies end, then forgets the pair.
func (p *Proxy) forward(c, up net.Conn) {
	defer p.wg.Done()
	var both sync.WaitGroup
	both.Add(2)
	go func() {
		defer both.Done()
		p.pipe(up, c)
	}()
	go func() {
		defer both.Done()
		p.pipe(c, up)
	}()
	both.Wait()
	p.untrack(c, up)
}

// untrack forgets connections whose copy ended, so that a long run does
// not keep every connection it saw.
func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = slices.DeleteFunc(p.conns, func(c net.Conn) bool { return slices.Contains(cs, c) })
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// Close ends the proxy and every connection through it, and waits for
// its goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
