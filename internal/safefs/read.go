package safefs

import (
	"fmt"
	"io"
	"os"
)

// Open opens the file at path for reading, as OpenFile does.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// ReadFile reads the file at path, opened as OpenFile does, refusing one
// larger than limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("read %s: larger than %d bytes: not a file graft wrote", path, limit)
	}
	return b, nil
}
