// Package faultproxy is a TCP proxy on loopback for tests that break the
// network for real: it forwards connections to a target until it is told
// to go dark, and then keeps every connection open and drops what flows
// either way, as a network that went dark does (no reset, no close).
package faultproxy

import (
	"net"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
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
		p.wg.Add(2)
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst while the network is up; dark, it reads and
// drops.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
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

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
