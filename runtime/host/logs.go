package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graftland/graft/runtime/output"
)

// logPath is where plugin name's log is.
func (h *Host) logPath(name string) string {
	return filepath.Join(h.dir, logDir, name+".log")
}

// logOf returns plugin name's log, opening it the first time. A plugin
// keeps one log across its restarts and replacements.
func (h *Host) logOf(name string) (*output.Log, error) {
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

// Follow returns the last n lines of plugin name's log and, when follow is
// set, every line after until the returned stop is called.
func (h *Host) Follow(name string, n int, follow bool) (lines []string, live <-chan string, stop func(), err error) {
	h.mu.Lock()
	log := h.logs[name]
	h.mu.Unlock()
	if log != nil {
		if !follow {
			lines, err := log.Last(n)
			return lines, nil, func() {}, err
		}
		f, err := log.Follow(n)
		if err != nil {
			return nil, nil, nil, err
		}
		return nil, f.Lines(), f.Close, nil
	}
	if _, err := os.Stat(h.logPath(name)); err != nil {
		return nil, nil, nil, ErrNoLog
	}
	l, err := output.Open(h.logPath(name), output.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	defer l.Close()
	lines, err = l.Last(n)
	return lines, nil, func() {}, err
}
