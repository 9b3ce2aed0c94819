package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	goruntime "runtime"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// digestKeyFile is the file of a state dir that holds the host's
// spec.DigestKey, mode 0600: the digests of env values in the host's
// status and plans are keyed with it (docs/plan-format.md).
const digestKeyFile = statedir.DigestKey

// openDigestKey returns the digest key of state dir dir, made at random
// the first time. The host holds the state dir's lock, so no other
// process makes one meanwhile.
func openDigestKey(dir string) (spec.DigestKey, error) {
	k, err := ReadDigestKey(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k = spec.NewDigestKey()
	if err := atomicfile.Write(filepath.Join(dir, digestKeyFile), []byte(k.Hex()+"\n"), 0o600); err != nil {
		return k, fmt.Errorf("make the digest key: %w", err)
	}
	return k, nil
}

// ReadDigestKey reads the digest key of state dir dir, as the host that
// owns it and graft plan --state do. A key file that others than its owner
// may read is refused with a *DigestKeyError: whoever reads it can test
// guesses of env values against every status and plan.
func ReadDigestKey(dir string) (spec.DigestKey, error) {
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
		return spec.DigestKey{}, &DigestKeyError{Path: path, Why: fmt.Sprintf("mode %#o lets others read it", perm)}
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return spec.DigestKey{}, err
	}
	k, err := spec.ParseDigestKey(string(b))
	if err != nil {
		return k, &DigestKeyError{Path: path, Why: err.Error()}
	}
	return k, nil
}

// DigestKeyError is a digest key file the host will not use.
type DigestKeyError struct {
	Path string
	Why  string
}

func (e *DigestKeyError) Error() string { return "digest key " + e.Path + ": " + e.Why }

// Hint tells the operator what to do about it.
func (e *DigestKeyError) Hint() string {
	return "chmod 600 " + e.Path + ", or remove it: the host makes a new one (saved plans and statuses made under the old one no longer compare)"
}

// savedSpec is desired under the key a saved plan says it was made with,
// the host's or, for a plan made without a host, the one-time key its
// source carries: its Digest is what the plan's Desired must equal, and
// its hashes those of the plan's changes. A plan made under another key
// is stale: its digests cannot be checked.
func (h *Host) savedSpec(p *plan.Plan, src plan.Source, desired *spec.Spec) (*spec.Spec, error) {
	switch {
	case p.KeyID == "" || p.KeyID == h.key.ID():
		// "": a plan of a graft before keyed digests; one with env values
		// does not match, and is stale.
		return desired, nil
	case src.DigestKey != "":
		k, err := spec.ParseDigestKey(src.DigestKey)
		if err != nil || k.ID() != p.KeyID {
			return nil, &hostapi.StaleError{Reason: "its source's digest key is not the one its keyID names: the plan file was changed"}
		}
		return desired.WithKey(k), nil
	}
	return nil, &hostapi.StaleError{Reason: fmt.Sprintf("it was made with digest key %s, not this host's (%s): against another host, or before the state dir's key was made again", p.KeyID, h.key.ID())}
}
