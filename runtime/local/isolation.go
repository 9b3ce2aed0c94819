package local

import (
	"errors"
	"log/slog"
)

// LogIsolation logs whether plugins die with owner ("the host", "the
// runner") when it is killed outright, whatever they fork; if not, why,
// and what the operator can do.
func (l *Local) LogIsolation(log *slog.Logger, owner string) {
	iso := l.Isolation()
	if iso.Namespace {
		log.Info("plugins run in a PID namespace of "+owner+"'s own: nothing they start outlives "+owner, "user-namespace", iso.User)
		return
	}
	args := []any{"reason", iso.Err}
	var hint interface{ Hint() string }
	if errors.As(iso.Err, &hint) {
		args = append(args, "hint", hint.Hint())
	}
	log.Warn("plugins run without PID namespaces: what they start outlives "+owner+" killed outright, until the next one on its state dir stops it", args...)
}
