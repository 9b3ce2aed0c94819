package host

import (
	"path/filepath"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/internal/safefs"
)

// OpenHostLog opens host.log in the state dir dir for the host's own log,
// as a plugin's log is (output.Log): rotated at 10 MiB, 3 files kept, not
// written while the disk is nearly full. It points this process's standard
// output and error at the current file, again after each rotation, so that
// what the Go runtime writes there itself (a panic) lands in it too. A host
// started in the background (StartBackground) uses it.
func OpenHostLog(dir string) (*output.Log, error) { return openHostLog(dir, 0) }

// openHostLog is OpenHostLog, rotating at maxSize (0: the default).
func openHostLog(dir string, maxSize int64) (*output.Log, error) {
	if err := safefs.Root(dir, 0o750); err != nil {
		return nil, err
	}
	return output.Open(filepath.Join(dir, hostapi.HostLog), output.Options{MaxSize: maxSize, Opened: redirectStdio})
}
