package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// AgainstState is the plan of desired against st, a saved status read
// from file (graft plan --state), under the key of st's records (stateKey)
// read from the state dir dir. oneTime is the key, when a fresh one does
// (no digest of st depends on one), which a saved plan must carry.
func AgainstState(desired *spec.Spec, file string, st *plan.State, dir string) (p *plan.Plan, oneTime *spec.DigestKey, err error) {
	key, fresh, err := stateKey(file, st, dir)
	if err != nil {
		return nil, nil, err
	}
	if fresh {
		oneTime = &key
	}
	p, err = plan.Diff(desired.WithKey(key), st)
	return p, oneTime, err
}

// Alone is the plan of desired against nothing, made where no host runs
// (graft plan without one), under a fresh one-time key, which a saved
// plan must carry.
func Alone(desired *spec.Spec) (*plan.Plan, *spec.DigestKey, error) {
	key := spec.NewDigestKey()
	p, err := plan.Diff(desired.WithKey(key), &plan.State{Plugins: []plan.Record{}})
	return p, &key, err
}

// Save is p made to be saved and applied later (graft plan --out): with
// desired's source, and the one-time key its digests were made under, if
// any, so that the host that applies it can check them.
func Save(p *plan.Plan, desired *spec.Spec, oneTime *spec.DigestKey) *plan.Plan {
	saved := *p
	src := spec.SourceOf(desired)
	if oneTime != nil {
		src.DigestKey = oneTime.Hex()
	}
	saved.Source = &src
	return &saved
}

// stateKey is the digest key to plan against a saved state with. When its
// records' digests cover env values, that is the key they were made with,
// which only the state dir of their host holds: it is read from dir (it
// is the caller's, mode 0600), and a state dir without it is a
// *stateKeyError. Otherwise no digest of the state depends on a key, and
// a fresh one does (fresh is true).
func stateKey(file string, st *plan.State, dir string) (key spec.DigestKey, fresh bool, err error) {
	ids := map[string]bool{}
	for _, r := range st.Plugins {
		if keyed(r) {
			ids[r.KeyID] = true
		}
	}
	switch {
	case len(ids) == 0:
		return spec.NewDigestKey(), true, nil
	case ids[""]:
		return key, false, &stateKeyError{file: file, why: "some records have digests of env values but no keyID: the state was saved by an older graft, whose digests reveal env values; save it again with graft status --json"}
	case len(ids) > 1:
		return key, false, &stateKeyError{file: file, why: fmt.Sprintf("its records are keyed with %d different digest keys (%s): it is not one host's status", len(ids), strings.Join(slices.Sorted(maps.Keys(ids)), ", "))}
	}
	id := slices.Collect(maps.Keys(ids))[0]
	key, err = ReadKey(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return key, false, &stateKeyError{file: file, keyID: id, dir: dir, why: "the state dir " + dir + " holds no digest key"}
	case errors.As(err, new(*KeyError)):
		return key, false, err // its hint says what to do
	case err != nil:
		return key, false, &stateKeyError{file: file, keyID: id, dir: dir, why: "its key cannot be read here: " + err.Error()}
	case key.ID() != id:
		return key, false, &stateKeyError{file: file, keyID: id, dir: dir, why: "the state dir " + dir + " holds another one (" + key.ID() + ")"}
	}
	return key, false, nil
}

// keyed reports whether a record's digests depend on its host's digest
// key: it has env fields, or its fields are unknown.
func keyed(r plan.Record) bool {
	if r.Fields == nil {
		return r.KeyID != ""
	}
	for k := range r.Fields {
		if strings.HasPrefix(k, "env.") {
			return true
		}
	}
	return false
}

// stateKeyError is a saved state that cannot be planned against here: its
// digests of env values are keyed with a key this machine lacks.
type stateKeyError struct {
	file, keyID, dir, why string
}

func (e *stateKeyError) Error() string {
	if e.keyID == "" {
		return fmt.Sprintf("--state %s: %s", e.file, e.why)
	}
	return fmt.Sprintf("--state %s: its digests of env values are keyed with digest key %s, and %s", e.file, e.keyID, e.why)
}

// Hint tells the operator what to do about it.
func (e *stateKeyError) Hint() string {
	if e.keyID == "" {
		return "plan against the host itself: graft plan without --state"
	}
	return "plan against the host itself (graft plan without --state, with --host for one over TCP), or where its state dir is (--state-dir DIR)"
}
