//go:build !unix

package runner

import (
	"errors"
	"os"
)

// inheritable makes f survive an exec: not here.
func inheritable(*os.File) error { return errors.New("no descriptor survives an exec here") }
