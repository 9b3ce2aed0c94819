// Package elect elects one leader among hosts through a lease file on a shared directory.
package elect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graftland/graft/internal/group"
)

// The election's defaults: ttl, renew, poll and lockStale
// (docs/semantics.md, "Floating plugins: the election").
const (
	DefaultTTL       = 15 * time.Second
	DefaultRenew     = 3 * time.Second
	DefaultPoll      = 2 * time.Second
	DefaultLockStale = 15 * time.Second
)

// DialTimeout bounds a leader's probe of its own plugin (a TCP connect
// to its address), so a plugin whose address vanished from the network
// does not hold the probe for the OS's connect timeout (tens of seconds).
const DialTimeout = time.Second

var (
	// ErrNotLeader: the lease no longer holds this term (a higher epoch took
	// it, or the term was lost), so Resign had nothing to release.
	ErrNotLeader = errors.New("lease not held by this term")
	// ErrSuperseded: renewal found a higher epoch (or this epoch written by
	// another holder) in the lease.
	ErrSuperseded = errors.New("lease taken by a newer term")
	// ErrClosed: the election was closed.
	ErrClosed = errors.New("election closed")
)

// ExhaustedError is a campaign that cannot go on: the lease has had epoch
// math.MaxInt64, and epochs, the plugin's generations, never wrap to
// negative nor repeat. Campaign returns it at once.
type ExhaustedError struct {
	Instance string
	Dir      string
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("elect %s in %s: the lease has had epoch %d, the largest there is: no later one can be elected", e.Instance, e.Dir, int64(math.MaxInt64))
}

// Hint tells the operator what to do about it.
func (e *ExhaustedError) Hint() string {
	return "give the plugin another instance name (instance: in plugins.yaml) on every host; its epochs begin again at 1"
}

// ConfigError says which field of a Config New refused, and why.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("elect config: %s: %s", e.Field, e.Reason) }

// Config says where the lease lives, who this host is and how time runs.
type Config struct {
	// Dir is the shared directory holding the lease and lock files; it must
	// exist when New is called.
	Dir string
	// Instance names the files: <Instance>.lease.json and <Instance>.lock.
	// It must be a plain file name.
	Instance string
	// HostID is written as the lease's holder. It must be unique among the
	// hosts sharing Dir: two hosts with one id cannot tell their terms apart.
	HostID string
	// Address (host:port) is where this host's plugin serves; it is written
	// in the lease for followers, and contenders probe it.
	Address string
	// TTL, Renew, Poll and LockStale: zero means the default above. Renew
	// and Poll must be shorter than TTL.
	TTL, Renew, Poll, LockStale time.Duration
	// Clock is nil for real time; tests pass a fake one.
	Clock Clock
	// StopBudget is how long the leader's host may take to confirm its
	// plugin gone once it gives up a term; New refuses a TTL that cannot
	// hold it (MinTTL). Zero checks nothing.
	StopBudget time.Duration
	// Fault, when set, is called on the goroutine of every operation on
	// the share before it runs, with the operation's name: tests block in
	// it to make the share hang, or return an error to make the operation
	// fail with it, as an unreachable NFS or SMB server would. nil in
	// production.
	Fault func(op string) error
}

// MinTTL is the shortest ttl with which a leader whose renewals stop
// succeeding can confirm its plugin gone before another host may take
// over: it gives up at most 2 × renew after the last successful renewal
// began (the next renewal is due renew later, and has until the one after
// to succeed), then needs stopBudget. docs/semantics.md, "Floating
// plugins: the election", derives it.
func MinTTL(renew, stopBudget time.Duration) time.Duration { return 2*renew + stopBudget }

// Election is one host's view of one instance's lease. Its methods may be
// called from several goroutines; Close stops every goroutine it started.
type Election struct {
	cfg       Config
	leasePath string
	lockPath  string
	backoff   time.Duration

	// pending holds a token for every operation on the share under way
	// (see do).
	pending chan struct{}

	// rename is os.Rename. It is a seam for tests: running as root, they
	// cannot make the directory unwritable, so they make the rename fail.
	rename func(oldpath, newpath string) error

	ctx        context.Context
	cancel     context.CancelFunc
	goroutines group.Group // renewals, observers: ended by Close

	following atomic.Bool // a campaign follows a healthy leader

	// readMu orders looks, so the freshness tracker sees reads in the order
	// they happened.
	readMu sync.Mutex

	mu        sync.Mutex
	seen      bool      // a lease was read at least once
	last      fileState // the last lease read
	changedAt time.Time // when this host saw last change, on its clock
	witnessed bool      // last was written after a look that knew the file (sighting.witnessed)
	knew      bool      // a look read the lease or found no file
	maxEpoch  int64     // the highest epoch read or written
	problem   error     // the last look's *UnreadableError, if it found one
}

// New checks cfg, fills in defaults and returns an election that has not
// touched the lease yet.
func New(cfg Config) (*Election, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("elect: %w", err)
	}
	if !fi.IsDir() {
		return nil, &ConfigError{Field: "Dir", Reason: "not a directory"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Election{
		cfg:       cfg,
		leasePath: filepath.Join(cfg.Dir, cfg.Instance+".lease.json"),
		lockPath:  filepath.Join(cfg.Dir, cfg.Instance+".lock"),
		backoff:   herdBackoff(cfg.HostID),
		pending:   make(chan struct{}, maxPending),
		rename:    os.Rename,
		ctx:       ctx,
		cancel:    cancel,
	}, nil
}

func (c *Config) fill() error {
	switch {
	case c.Dir == "":
		return &ConfigError{Field: "Dir", Reason: "empty"}
	case c.Instance == "" || c.Instance == "." || strings.ContainsAny(c.Instance, `/\:`) || !filepath.IsLocal(c.Instance):
		// The instance becomes a file name; it must not escape Dir.
		return &ConfigError{Field: "Instance", Reason: fmt.Sprintf("%q is not a plain file name", c.Instance)}
	case c.HostID == "":
		return &ConfigError{Field: "HostID", Reason: "empty"}
	case c.Address == "":
		return &ConfigError{Field: "Address", Reason: "empty"}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"TTL", &c.TTL, DefaultTTL}, {"Renew", &c.Renew, DefaultRenew}, {"Poll", &c.Poll, DefaultPoll}, {"LockStale", &c.LockStale, DefaultLockStale}} {
		if *d.v < 0 {
			return &ConfigError{Field: d.name, Reason: "negative"}
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.Renew >= c.TTL {
		return &ConfigError{Field: "Renew", Reason: "must be shorter than TTL, or followers see a live leader as dead"}
	}
	if c.Poll >= c.TTL {
		return &ConfigError{Field: "Poll", Reason: "must be shorter than TTL"}
	}
	if c.StopBudget < 0 {
		return &ConfigError{Field: "StopBudget", Reason: "negative"}
	}
	if least := MinTTL(c.Renew, c.StopBudget); c.StopBudget > 0 && c.TTL <= least {
		return &ConfigError{Field: "TTL", Reason: fmt.Sprintf("%s leaves no time to stop the plugin: a leader gives up 2 × renew (%s) after its last renewal and may take %s to stop its plugin, so ttl must be longer than %s (raise ttl or lower renew)", c.TTL, 2*c.Renew, c.StopBudget, least)}
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return nil
}

// Close stops every goroutine the election started (observers, renewals)
// and waits for them. It does not release a lease: a term still held is
// abandoned, and followers take over after TTL (Resign first to hand over
// within one poll). Campaigns in flight return ErrClosed.
func (e *Election) Close() {
	e.goroutines.Close(e.cancel)
}

// goroutine runs f on a goroutine the election owns, or returns false if
// the election is closed.
func (e *Election) goroutine(f func()) bool { return e.goroutines.Go(f) }

// Join returns a context that ends with ctx or with election, the context
// an election (of either backend) cancels when it is closed; its cause is
// ErrClosed in the second case. Campaigns and observers run on it; the
// function returned releases it.
func Join(ctx, election context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if election.Err() != nil {
		cancel(ErrClosed) // at once: AfterFunc would run it on a goroutine
	}
	stop := context.AfterFunc(election, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

func (e *Election) noteEpoch(epoch int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.maxEpoch = max(e.maxEpoch, epoch)
}
