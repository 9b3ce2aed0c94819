package runtimetest

import (
	"strings"
	"sync"
	"time"
)

// Recorder is a runtime.Output that keeps everything written and lets a
// test wait for a line.
type Recorder struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{changed: make(chan struct{})} }

// Write keeps p and wakes whoever waits.
func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	close(r.changed)
	r.changed = make(chan struct{})
	return len(p), nil
}

// Tail returns every complete or partial line written.
func (r *Recorder) Tail() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.TrimSuffix(r.buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// String returns everything written.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// WaitFor waits up to timeout for a line containing s to be written.
func (r *Recorder) WaitFor(s string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		found, changed := strings.Contains(r.buf.String(), s), r.changed
		r.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
