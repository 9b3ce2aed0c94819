package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/spec"
)

// ValidateName refuses a plugin name that no plugins file can hold, before
// it reaches a path: a name that comes in a request (GET
// /v1/logs/{plugin}) could otherwise name a file anywhere
// ("../../etc/passwd").
func ValidateName(name string) error {
	if spec.ValidPlugin(name) {
		return nil
	}
	return &NotFoundError{What: fmt.Sprintf("no plugin is named %q: a plugin's name has %s, and a replica's is NAME/N", name, spec.NameRule)}
}

// NotFoundError is a request about something the host does not have.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What }

// logPath is where plugin name's log is; name has passed checkName.
func (h *Host) logPath(name string) string {
	return filepath.Join(h.dir, logDir, spec.PluginFileName(name)+".log")
}

// logOf returns plugin name's log, opening it the first time. A plugin
// keeps one log across its restarts and replacements.
func (h *Host) logOf(name string) (*output.Log, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.logs[name]; l != nil {
		return l, nil
	}
	l, err := output.Open(h.logPath(name), output.Options{})
	if err != nil {
		return nil, fmt.Errorf("open the log of %s: %w", name, err)
	}
	h.logs[name] = l
	return l, nil
}

// closeUnusedLogs closes the logs of plugins that are gone; called at the
// end of an apply, when no step is using them.
func (h *Host) closeUnusedLogs() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, l := range h.logs {
		if h.plugins[name] == nil {
			l.Close()
			delete(h.logs, name)
		}
	}
}

// ErrNoLog is returned for a plugin that never ran here.
var ErrNoLog = errors.New("no log: the plugin never ran on this host")

// LogStream is a plugin's log as graft logs reads it: its last lines,
// then, when followed, the lines written after them.
type LogStream struct {
	backlog  *output.Section
	follower *output.Follower // nil unless followed
}

// WriteBacklog writes the last lines out, each ended by '\n', reading
// them from the log's files a block at a time.
func (s *LogStream) WriteBacklog(w io.Writer) error {
	_, err := s.backlog.WriteTo(w)
	return err
}

// Live delivers the lines written after the backlog, until the plugin's
// log closes or Close; nil unless followed.
func (s *LogStream) Live() <-chan string {
	if s.follower == nil {
		return nil
	}
	return s.follower.Lines()
}

// Close releases the stream.
func (s *LogStream) Close() {
	s.backlog.Close()
	if s.follower != nil {
		s.follower.Close()
	}
}

// Follow returns the last n lines (at most hostapi.MaxLogLines) of plugin
// name's log and, when follow is set and the plugin runs, every line after
// until the stream is closed. A name no plugin can have is a *NotFoundError,
// before it reaches a path; a log that is not a regular file (a link, a
// named pipe) is refused, not read.
func (h *Host) Follow(name string, n int, follow bool) (*LogStream, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	n = min(max(n, 0), hostapi.MaxLogLines)
	h.mu.Lock()
	log := h.logs[name]
	h.mu.Unlock()
	if log != nil {
		if !follow {
			s, err := log.LastTo(n)
			if err != nil {
				return nil, err
			}
			return &LogStream{backlog: s}, nil
		}
		s, f, err := log.Follow(n)
		if err != nil {
			return nil, err
		}
		return &LogStream{backlog: s, follower: f}, nil
	}
	s, err := output.LastOf(h.logPath(name), output.Options{}, n)
	if errors.Is(err, fs.ErrNotExist) {
		if replicas := h.replicasOf(name); len(replicas) > 0 {
			return nil, &NotFoundError{What: fmt.Sprintf("%s runs as %d replicas, each with its log: name one, such as %s", name, len(replicas), replicas[0])}
		}
		return nil, ErrNoLog
	}
	if err != nil {
		return nil, err
	}
	return &LogStream{backlog: s}, nil
}

// replicasOf lists the replicas of name in the applied spec, if it has
// any.
func (h *Host) replicasOf(name string) []string {
	h.mu.Lock()
	a := h.spec
	h.mu.Unlock()
	if a == nil || a.parsed == nil || a.parsed.Plugins[name] != nil {
		return nil
	}
	return a.parsed.Named(name)
}
