package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/graftland/graft/internal/safefs"
)

// Runners before the journal kept a file a generation and a file a record
// (docs/state-dir.md): generations/<escaped instance> and
// records/<escaped instance>.json. A state dir they left is read at open
// and folded into the journal, then those directories are removed.

// foldOld reads the old layout of dir into rp; old when there is one. A generation file is kept
// by its escaped name (opOldGen), which a long name, cut and ended by a
// digest, cannot be turned back from; a record names its instance. A
// record is folded only when the journal never saw its generation: the
// journal is newer. A record file that cannot be read as one is returned
// in bad; a generation that cannot be read fails it, as it failed a start
// of its instance before.
func foldOld(dir string, rp *replay) (old bool, bad []string, err error) {
	gens, err := oldFiles(filepath.Join(dir, generationsDir))
	if err != nil {
		return false, nil, err
	}
	for _, path := range gens {
		n, err := readOldGeneration(path)
		if err != nil {
			return false, nil, fmt.Errorf("read the generation of the old layout: %w", err)
		}
		key := filepath.Base(path)
		rp.oldLast[key] = max(rp.oldLast[key], n)
	}
	recs, err := oldFiles(filepath.Join(dir, recordsDir))
	if err != nil {
		return false, nil, err
	}
	for _, path := range recs {
		rec, err := readOldRecord(path)
		if err != nil {
			bad = append(bad, path)
			continue
		}
		if rec.Generation > rp.last[rec.Instance] {
			rp.apply(entry{Op: opStart, record: rec})
		}
	}
	return len(gens)+len(recs) > 0, bad, nil
}

// oldFiles lists the files of an old layout's directory, if there is one,
// but the temporary files a crash left (their names start with '.'). A
// link where the directory goes fails it.
func oldFiles(dir string) ([]string, error) {
	if err := safefs.Check(dir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// readOldGeneration reads a generation file of the old layout.
func readOldGeneration(path string) (int64, error) {
	b, err := safefs.ReadFile(path, maxStateFile)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: not a generation: %q", path, b)
	}
	return n, nil
}

// readOldRecord reads a record file of the old layout, which must be
// named for the instance it records.
func readOldRecord(path string) (record, error) {
	var rec record
	b, err := safefs.ReadFile(path, maxStateFile)
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err == nil && (validateName(rec.Instance) != nil || escape(rec.Instance)+".json" != filepath.Base(path) || rec.Invocation == "" || rec.Generation < 0) {
		err = errors.New("not a record of this runner")
	}
	return rec, err
}
