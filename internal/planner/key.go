// Package planner makes graft's plans, and owns the digest keys they are
// made under (docs/plan-format.md, "Digests"): a host's plans of what it
// runs, under its state dir's key; graft plan's against a saved status,
// under the key that status was made with; and graft plan's without a
// host, under a one-time key that a saved plan carries. A saved plan is
// checked under the key it says it was made with.
package planner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	goruntime "runtime"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/spec"
)

// digestKeyFile is the file of a state dir that holds its host's
// spec.DigestKey, mode 0600: the digests of env values in the host's
// status and plans are keyed with it (docs/plan-format.md).
const digestKeyFile = statedir.DigestKey

// openKey returns the digest key of state dir dir, made at random the
// first time. The host holds the state dir's lock, so no other process
// makes one meanwhile.
func openKey(dir string) (spec.DigestKey, error) {
	k, err := ReadKey(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k = spec.NewDigestKey()
	if err := atomicfile.Write(filepath.Join(dir, digestKeyFile), []byte(k.Hex()+"\n"), 0o600); err != nil {
		return k, fmt.Errorf("make the digest key: %w", err)
	}
	return k, nil
}

// ReadKey reads the digest key of state dir dir, as the host that owns it
// and graft plan --state do. A key file that others than its owner may
// read is refused with a *KeyError: whoever reads it can test guesses of
// env values against every status and plan.
func ReadKey(dir string) (spec.DigestKey, error) {
	path := filepath.Join(dir, digestKeyFile)
	f, err := safefs.Open(path) // no link, no pipe
	if err != nil {
		return spec.DigestKey{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return spec.DigestKey{}, err
	}
	// Windows has no modes to check: there the state dir's ACLs guard it.
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && goruntime.GOOS != "windows" {
		return spec.DigestKey{}, &KeyError{Path: path, Why: fmt.Sprintf("mode %#o lets others read it", perm)}
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return spec.DigestKey{}, err
	}
	k, err := spec.ParseDigestKey(string(b))
	if err != nil {
		return k, &KeyError{Path: path, Why: err.Error()}
	}
	return k, nil
}

// KeyError is a digest key file the host will not use.
type KeyError struct {
	Path string
	Why  string
}

func (e *KeyError) Error() string { return "digest key " + e.Path + ": " + e.Why }

// Hint tells the operator what to do about it.
func (e *KeyError) Hint() string {
	return "chmod 600 " + e.Path + ", or remove it: the host makes a new one (saved plans and statuses made under the old one no longer compare)"
}
