//go:build !unix

package host

import (
	"errors"
	"os"
)

func lockDir(dir string) (*os.File, error) {
	return nil, errors.New("the graft host runs on Linux and other Unix systems only")
}
