//go:build !unix

package dirlock

import (
	"errors"
	"os"
)

// Lock fails: graft's daemons run on Linux and other Unix systems only.
func Lock(path, holder string) (*os.File, error) {
	return nil, errors.New("lock " + path + ": graft's daemons run on Linux and other Unix systems only")
}
