package testsupport

import (
	"bytes"
	"net"
	"sync"
)

// Recorder is a listener that keeps every byte its connections read:
// what clients sent it, for tests that a secret never left a client.
type Recorder struct {
	net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

// Record returns l, recording.
func Record(l net.Listener) *Recorder { return &Recorder{Listener: l} }

// Accept accepts a connection whose reads are recorded.
func (r *Recorder) Accept() (net.Conn, error) {
	c, err := r.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordedConn{Conn: c, r: r}, nil
}

// Bytes is what the connections read so far.
func (r *Recorder) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.got.Bytes())
}

type recordedConn struct {
	net.Conn
	r *Recorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.mu.Lock()
	c.r.got.Write(p[:n])
	c.r.mu.Unlock()
	return n, err
}
