package spec

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/errors")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
