package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime"
)

// session is one lease with the runner: the processes started under it,
// its renewals every third of the lease (retried while the lease holds),
// and its event stream.
type session struct {
	r     *Remote
	c     *client
	cfg   Config // the Remote's when it opened
	id    string
	lease time.Duration

	// ctx ends when the session is lost or closed; its cause says why.
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	handles map[key]*handle
	// What came before the start's answer: a process may write, and
	// exit, before its start is answered.
	early    map[key]runtime.Exit
	earlyOut map[key][]string
	// The generations whose start failed: the stream may still bring
	// their lines after the failure's answer, which no handle will take.
	failed map[key]struct{}
	seen   time.Time // when the stream last delivered a line
}

type key struct {
	instance string
	gen      int64
}

// openTimeout bounds opening a session.
const openTimeout = 15 * time.Second

// openSession opens a session and its event stream, and starts renewing.
func openSession(ctx context.Context, r *Remote, cfg Config, c *client) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	var opened runnerapi.Session
	// The lease is counted from when the request was sent: the runner
	// starts it later, never earlier.
	sent := time.Now()
	req := runnerapi.OpenSession{Holder: cfg.Holder, LeaseMillis: cfg.Lease.Milliseconds()}
	if err := c.call(ctx, "open a session", http.MethodPost, "/v1/sessions", req, &opened); err != nil {
		return nil, err
	}
	s, events, err := newSession(ctx, r, cfg, c, opened.Session, opened.LeaseMillis)
	if err != nil {
		// Nothing runs under it yet: end it at once, rather than leave
		// the runner a session for every start refused (its streams
		// all taken, say) until each lease runs out.
		dctx, dcancel := context.WithTimeout(context.Background(), openTimeout)
		if derr := c.call(dctx, "end the session", http.MethodDelete, "/v1/sessions/"+url.PathEscape(opened.Session), nil, nil); derr != nil {
			r.log.Debug("could not end a session whose event stream did not open", "runner", cfg.Name, "session", opened.Session, "err", derr)
		}
		dcancel()
		return nil, err
	}
	s.start(events, sent)
	r.log.Debug("session opened", "runner", cfg.Name, "session", s.id, "lease", s.lease)
	return s, nil
}

// newSession makes session id, of a lease of leaseMillis, and opens its
// event stream, which lives as long as the session; its answer must come
// within ctx's bound. Nothing is started under it before its stream is
// open, so no exit is missed.
func newSession(ctx context.Context, r *Remote, cfg Config, c *client, id string, leaseMillis int64) (*session, *http.Response, error) {
	sctx, scancel := context.WithCancelCause(context.Background())
	s := &session{
		r: r, c: c, cfg: cfg, id: id, lease: time.Duration(leaseMillis) * time.Millisecond,
		ctx: sctx, cancel: scancel, handles: map[key]*handle{}, early: map[key]runtime.Exit{}, earlyOut: map[key][]string{}, failed: map[key]struct{}{}, seen: time.Now(),
	}
	if s.lease <= 0 {
		scancel(errors.New("bad lease"))
		return nil, nil, &RemoteError{Runner: c.name, Op: "open a session", Err: fmt.Errorf("the runner gave a lease of %dms", leaseMillis)}
	}
	slow := time.AfterFunc(time.Until(deadline(ctx)), func() { scancel(errors.New("no answer to the event stream's request")) })
	resp, err := c.send(sctx, "follow the session's events", http.MethodGet, "/v1/sessions/"+url.PathEscape(s.id)+"/events", nil)
	slow.Stop()
	if err != nil {
		scancel(err)
		return nil, nil, err
	}
	return s, resp, nil
}

// start follows the session's events and renews its lease, held since
// held (when the request that opened or last renewed it was sent), and
// tells the Remote's OnSession of it.
func (s *session) start(events *http.Response, held time.Time) {
	s.wg.Add(2)
	go s.follow(events)
	go s.renew(held)
	if f := s.cfg.OnSession; f != nil {
		f(s.id)
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// track makes the handle of a process the session started.
func (s *session) track(req runtime.Request, inst string, st runnerapi.Started) *handle {
	h := s.newHandle(req, inst, st)
	k := key{inst, st.Generation}
	s.mu.Lock()
	exit, early := s.early[k]
	lines := s.earlyOut[k]
	delete(s.early, k)
	delete(s.earlyOut, k)
	if !early {
		s.handles[k] = h
	}
	// The early lines are written under the lock, so none that comes later
	// overtakes them.
	for _, l := range lines {
		h.output(l)
	}
	s.mu.Unlock()
	if early {
		h.finish(exit)
	}
	if s.ctx.Err() != nil {
		h.finish(s.lostExit())
	}
	return h
}

// untrack forgets h once its stop is confirmed: no event of it is due.
func (s *session) untrack(h *handle) {
	k := key{h.instance, h.gen}
	s.mu.Lock()
	if s.handles[k] == h {
		delete(s.handles, k)
	}
	s.mu.Unlock()
}

// forget drops what came for k before a start's answer that failed, and
// what comes for it after.
func (s *session) forget(k key) {
	s.mu.Lock()
	delete(s.early, k)
	delete(s.earlyOut, k)
	roomFor(s.failed, k)
	s.failed[k] = struct{}{}
	s.mu.Unlock()
}

// follow reads the event stream: output to the plugins' logs, exits to
// their handles. A stream that ends is followed again, on a fresh
// connection, for as long as a lease: the runner keeps what it sends
// meanwhile for the next stream, so a broken connection, or a runner that
// replaced its program (docs/upgrade.md), loses nothing. A stream not
// back within the lease, or a lease without a line (the runner pings
// every third of it), loses the session.
func (s *session) follow(resp *http.Response) {
	defer s.wg.Done()
	lines := make(chan struct{}, 1)
	s.wg.Add(1)
	go s.watchdog(lines)
	for done := func() {}; ; {
		err := s.read(resp, lines)
		done()
		if s.ctx.Err() != nil {
			return
		}
		s.r.log.Info("the session's event stream ended: following it again", "runner", s.cfg.Name, "session", s.id, "err", err)
		if resp, done, err = s.reconnect(err); err != nil {
			s.lose("follow the session's events", err)
			return
		}
	}
}

// read reads one stream of the session's events until it ends, and says
// why it did.
func (s *session) read(resp *http.Response, lines chan<- struct{}) error {
	defer resp.Body.Close()
	stop := context.AfterFunc(s.ctx, func() { resp.Body.Close() })
	defer stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), runnerapi.MaxBody)
	for sc.Scan() {
		select {
		case lines <- struct{}{}:
		default:
		}
		var ev runnerapi.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		s.event(ev)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("the runner ended the event stream")
}

// reconnect opens the session's event stream again, retrying with the
// pauses of the renewals for as long as a lease, and returns it, with the
// function to call once it is read; the runner's answer that the session
// is gone ends the retries at once. ended is why the last stream ended.
func (s *session) reconnect(ended error) (*http.Response, func(), error) {
	c := newCadence(s.lease, s.cfg.Margin)
	until := time.Now().Add(s.lease)
	last := ended
	for pause := c.pause; time.Now().Before(until); pause = min(2*pause, c.most) {
		if !s.sleep(pause) {
			return nil, nil, context.Cause(s.ctx)
		}
		// The stream lives on the request's context: only its answer is
		// bounded.
		ctx, cancel := context.WithCancel(s.ctx)
		slow := time.AfterFunc(time.Until(until), cancel)
		resp, err := s.c.send(ctx, "follow the session's events", http.MethodGet, "/v1/sessions/"+url.PathEscape(s.id)+"/events", nil)
		if slow.Stop() && err == nil {
			return resp, cancel, nil
		}
		cancel()
		if err == nil {
			resp.Body.Close()
			break
		}
		// The runner answered, and refused (the session is gone, a token it
		// no longer takes): only a busy or failing runner is tried again.
		var api *APIError
		if errors.As(err, &api) && api.Status != http.StatusTooManyRequests && api.Status < 500 || s.ctx.Err() != nil {
			return nil, nil, err
		}
		last = err
	}
	return nil, nil, fmt.Errorf("the event stream could not be followed again within the lease of %s: %w", s.lease, last)
}

// watchdog loses the session when the stream is quiet for a whole lease.
func (s *session) watchdog(lines <-chan struct{}) {
	defer s.wg.Done()
	t := time.NewTimer(s.lease)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-lines:
			t.Reset(s.lease)
		case <-t.C:
			s.lose("follow the session's events", fmt.Errorf("no event or ping for %s", s.lease))
			return
		}
	}
}

// maxEarly bounds the lines kept for a process whose start is not
// answered yet, and maxEarlyKeys the processes kept so (and the failed
// starts remembered): a start whose answer never came (its caller gave
// up) leaves its own behind.
const (
	maxEarly     = 1000
	maxEarlyKeys = 64
)

// roomFor makes room in m for k, dropping another key when m is full.
// s.mu is held.
func roomFor[V any](m map[key]V, k key) {
	if _, ok := m[k]; ok || len(m) < maxEarlyKeys {
		return
	}
	for other := range m {
		delete(m, other)
		return
	}
}

func (s *session) event(ev runnerapi.Event) {
	k := key{ev.Instance, ev.Generation}
	s.mu.Lock()
	h := s.handles[k]
	_, failed := s.failed[k]
	switch {
	case h == nil && failed: // no handle will take it: dropped
	case ev.Type == runnerapi.EventOutput && h == nil:
		roomFor(s.earlyOut, k)
		if len(s.earlyOut[k]) < maxEarly {
			s.earlyOut[k] = append(s.earlyOut[k], ev.Line)
		}
	case ev.Type == runnerapi.EventOutput:
		h.output(ev.Line)
	case ev.Type == runnerapi.EventHealth && h != nil && ev.Health != nil:
		h.checked(*ev.Health)
	case ev.Type == runnerapi.EventExit && ev.Exit != nil:
		if h == nil {
			roomFor(s.early, k)
			s.early[k] = exitOf(*ev.Exit)
		}
		delete(s.handles, k)
	}
	s.mu.Unlock()
	if h != nil && ev.Type == runnerapi.EventExit && ev.Exit != nil {
		h.finish(exitOf(*ev.Exit))
	}
}

// renew keeps the lease (docs/runner-api.md, "Renewals"): a renewal a
// third of the lease after the last one the runner acknowledged was sent;
// one that fails or is slow is retried until the lease, counted from that
// sending, is within the margin of running out. Only then, or when the
// runner answers that the session is gone, is the session lost.
func (s *session) renew(held time.Time) {
	defer s.wg.Done()
	c := newCadence(s.lease, s.cfg.Margin)
	for acked := held; ; {
		if !s.sleep(time.Until(acked.Add(c.every))) {
			return
		}
		sent, err := s.renewUntil(c, acked)
		if err != nil {
			s.lose("renew the session", err)
			return
		}
		acked = sent
	}
}

// cadence is when renewals are sent and retried, for a lease and a margin.
type cadence struct {
	lease, margin time.Duration // the margin as counted: at most a third of the lease
	every         time.Duration // the period of the renewals
	hold          time.Duration // how long past an acknowledged renewal's sending the host holds on
	slow          time.Duration // an attempt unanswered this long is doubled by another
	pause, most   time.Duration // the first pause after a failed attempt, and the longest
}

// newCadence is the cadence of a lease: renewals every third of it, held
// for the lease less the margin (at most a third of the lease, so that a
// missed renewal has a third of the lease to be retried); an attempt
// unanswered for half a period is doubled by another, and the pauses
// after failed attempts begin at a sixteenth of a period and double up to
// a quarter of it.
func newCadence(lease, margin time.Duration) cadence {
	every := lease / 3
	margin = min(margin, every)
	return cadence{
		lease: lease, margin: margin, every: every, hold: lease - margin,
		slow: every / 2, pause: every / 16, most: every / 4,
	}
}

// answer is how one attempt to renew ended, and when it was sent.
type answer struct {
	sent time.Time
	err  error
}

// renewUntil renews the lease, retrying while the lease acknowledged at
// acked (when that renewal was sent) holds, and returns when the renewal
// the runner acknowledged was sent. Every attempt waits for its answer as
// long as the lease holds; one that fails is followed by another after a
// pause, and one that is slow is doubled by another meanwhile, on a fresh
// connection (its own may be dead).
func (s *session) renewUntil(c cadence, acked time.Time) (time.Time, error) {
	if time.Until(acked.Add(c.hold)) <= 0 {
		return time.Time{}, c.expired(time.Since(acked), 0, nil) // the host itself was held up
	}
	ctx, cancel := context.WithDeadline(s.ctx, acked.Add(c.hold))
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	answers := make(chan answer)
	next := time.NewTimer(0)
	defer next.Stop()
	pause := c.pause
	tries, slow := 0, false // slow: next is due because the attempts under way are
	var last error
	for {
		select {
		case <-next.C:
			if slow {
				s.r.log.Warn("renewal unanswered: retrying", "runner", s.cfg.Name, "session", s.id,
					"after", c.slow, "left", time.Until(acked.Add(c.hold)).Round(time.Millisecond))
			}
			if tries > 0 {
				// Connections kept for reuse may be dead (a network gone
				// dark for a moment): the next attempt dials afresh.
				s.c.close()
			}
			tries++
			wg.Add(1)
			go func(sent time.Time) {
				defer wg.Done()
				err := s.renewOnce(ctx)
				select {
				case answers <- answer{sent, err}:
				case <-ctx.Done():
				}
			}(time.Now())
			next.Reset(c.slow)
			slow = true
		case a := <-answers:
			switch {
			case a.err == nil:
				if tries > 1 {
					s.r.log.Info("session renewed", "runner", s.cfg.Name, "session", s.id, "attempts", tries)
				}
				return a.sent, nil
			case ctx.Err() != nil:
				return time.Time{}, c.end(s.ctx, time.Since(acked), tries, last)
			case sessionGone(a.err):
				return time.Time{}, a.err // the runner's lease ran out: nothing to hold on to
			}
			last = a.err
			s.r.log.Warn("renewal failed: retrying", "runner", s.cfg.Name, "session", s.id,
				"left", time.Until(acked.Add(c.hold)).Round(time.Millisecond), "err", a.err)
			next.Reset(pause)
			slow = false
			pause = min(2*pause, c.most)
		case <-ctx.Done():
			return time.Time{}, c.end(s.ctx, time.Since(acked), tries, last)
		}
	}
}

// renewOnce sends one renewal and waits for its answer while ctx lasts.
func (s *session) renewOnce(ctx context.Context) error {
	var renewed runnerapi.Renewed
	return s.c.call(ctx, "renew the session", http.MethodPost, "/v1/sessions/"+url.PathEscape(s.id)+"/renew", nil, &renewed)
}

// end is why renewUntil stopped once its context ended: the session's end
// (closed, or lost otherwise), or else the lease running out.
func (c cadence) end(session context.Context, since time.Duration, tries int, last error) error {
	if session.Err() != nil {
		return context.Cause(session)
	}
	return c.expired(since, tries, last)
}

// expired is the loss of a session whose renewals went unanswered until
// the lease, less the margin, ran out since the last acknowledged one was
// sent: after tries attempts, the last to fail with last (nil when none
// failed, all unanswered, or none was sent, as when the host itself was
// frozen).
func (c cadence) expired(since time.Duration, tries int, last error) error {
	why := fmt.Sprintf("no renewal acknowledged for %s, and the lease of %s with a margin of %s was running out",
		since.Round(time.Millisecond), c.lease, c.margin)
	var remote *RemoteError
	if errors.As(last, &remote) {
		last = remote.Err
	}
	switch {
	case tries == 0:
		return errors.New(why + " (the host itself was held up)")
	case last == nil:
		return fmt.Errorf("%s (%d attempts, none answered)", why, tries)
	default:
		return fmt.Errorf("%s (%d attempts; the last to fail: %w)", why, tries, last)
	}
}

// sessionGone reports whether err is the runner's answer that the
// session is over.
func sessionGone(err error) bool {
	var api *APIError
	return errors.As(err, &api) && api.Kind == runnerapi.KindNoSession
}

// sleep waits d, and reports false if the session ended meanwhile.
func (s *session) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lose ends the session for a failure: every process it started is lost
// to the host (it runs on until its lease runs out on the runner).
func (s *session) lose(op string, err error) {
	if s.ctx.Err() != nil {
		return
	}
	var remote *RemoteError
	if !errors.As(err, &remote) {
		err = &RemoteError{Runner: s.c.name, Op: op, Err: err}
	}
	s.r.log.Warn("session with the runner lost", "runner", s.cfg.Name, "session", s.id, "err", err)
	s.cancel(err)
	s.mu.Lock()
	handles := s.handles
	s.handles = map[key]*handle{}
	s.mu.Unlock()
	exit := s.lostExit()
	for _, h := range handles {
		h.finish(exit)
	}
	// Connections kept for reuse may have died with the session (a
	// network gone dark): the next session dials afresh.
	s.c.close()
}

// lostExit is the end of a process whose session was lost.
func (s *session) lostExit() runtime.Exit {
	return runtime.Exit{Code: -1, Error: context.Cause(s.ctx).Error(), Lost: true, Outcome: runtime.Unconfirmed, At: time.Now()}
}

// close stops the session's processes, then ends it on the runner.
func (s *session) close() *multierror.Error {
	s.mu.Lock()
	var live []*handle
	for _, h := range s.handles {
		live = append(live, h)
	}
	s.mu.Unlock()
	errs := multierror.Append(nil, runtime.StopAll(context.Background(), live))
	if s.ctx.Err() == nil {
		// Closed first, so the end of the event stream is not a loss.
		s.cancel(errors.New("session closed"))
		ctx, cancel := context.WithTimeout(context.Background(), waitConfirm(s.cfg, s.lease))
		var closed runnerapi.Closed
		if err := s.c.call(ctx, "end the session", http.MethodDelete, "/v1/sessions/"+url.PathEscape(s.id), nil, &closed); err != nil {
			errs = multierror.Append(errs, err)
		}
		cancel()
	}
	s.wg.Wait()
	s.r.dropClient(s.c)
	return errs
}

// tail keeps the last lines of a process's output.
type tail struct {
	mu  sync.Mutex
	buf []string
}

const tailLines = 20

func newTail() *tail { return &tail{} }

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, line)
	if len(t.buf) > tailLines {
		t.buf = t.buf[len(t.buf)-tailLines:]
	}
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.buf...)
}
