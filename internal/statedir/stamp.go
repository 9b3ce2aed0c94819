package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
)

// FormatFile is the stamp of a state dir, the host's and a runner's
// alike: a Format, as JSON.
const FormatFile = "format.json"

// The formats of the state dirs this graft keeps. Each grows by one when
// a state dir changes in a way that a graft of the previous format would
// misread (a file it would take for another, one it would not know to
// keep); files only added, that an older graft ignores, need none. A
// state dir without a stamp is of format 1: every state dir from before
// stamps is.
const (
	HostFormat   = 1
	RunnerFormat = 1
)

// Format is what a state dir's stamp holds: the form of the state dir,
// and the graft version that wrote that form. Its own form never
// changes: fields are only added.
type Format struct {
	Format  int    `json:"format"`
	Version string `json:"version"`
}

// maxStamp bounds what is read of a stamp.
const maxStamp = 4 << 10

// Stamp checks the stamp of state dir dir, which its daemon has locked,
// against want, the form this graft keeps it in:
//
//   - a stamp of a later format than want's is refused: a *NewerError,
//     naming the dir, both versions and the fix; nothing is written;
//   - a stamp of want's format is kept as it is, whichever version wrote
//     it: a daemon starts on a full disk, and writes nothing there is;
//   - no stamp (format 1), a stamp of an earlier format, or one that
//     cannot be parsed, is written afresh with want. A write that fails
//     is an error when it would raise the dir's format; it is only logged
//     when the dir is of want's format already, stamp or not (a full
//     disk). A file that is not graft's to read (a link, a named pipe) is
//     refused, naming it, as safefs does.
func Stamp(dir string, want Format, log *slog.Logger) error {
	path := filepath.Join(dir, FormatFile)
	b, err := safefs.ReadFile(path, maxStamp)
	found := Format{Format: 1}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		var f Format
		if json.Unmarshal(b, &f) != nil || f.Format < 1 {
			log.Warn("the state dir's stamp cannot be read: it is written afresh", "path", path)
			break
		}
		found = f
		if found.Format > want.Format {
			return &NewerError{Dir: dir, Found: found, Want: want}
		}
		if found.Format == want.Format {
			return nil
		}
	}
	b, _ = json.Marshal(want) // plain fields: always marshals
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		if found.Format < want.Format {
			return fmt.Errorf("stamp the state dir: %w", err)
		}
		log.Warn("the state dir's stamp could not be written: it is written at the next start", "path", path, "err", err)
	}
	return nil
}

// CheckStamp is Stamp's refusal alone, writing nothing: a *NewerError for
// a stamp of a later format than want's. What a new program checks of a
// dir before a host executes it (graft upgrade).
func CheckStamp(dir string, want Format) error {
	b, err := safefs.ReadFile(filepath.Join(dir, FormatFile), maxStamp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var f Format
	if json.Unmarshal(b, &f) == nil && f.Format > want.Format {
		return &NewerError{Dir: dir, Found: f, Want: want}
	}
	return nil
}

// NewerError is a state dir of a later format than this graft keeps: a
// newer graft wrote it, and this one would misread it.
type NewerError struct {
	Dir string
	// Found is the dir's stamp; Want this graft's form.
	Found, Want Format
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the state dir %s is in format %d, written by graft %s; this graft %s reads format %d at most, and would misread it",
		e.Dir, e.Found.Format, versionOr(e.Found.Version), versionOr(e.Want.Version), e.Want.Format)
}

// Hint tells the operator the way out.
func (e *NewerError) Hint() string {
	return fmt.Sprintf("use graft %s or later with this state dir (graft upgrade brings a host there), or give this graft another one (--state-dir DIR)", versionOr(e.Found.Version))
}

func versionOr(v string) string {
	if v == "" {
		return "(unknown version)"
	}
	return v
}
