package group

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCloseWaitsAndRefuses: Close ends the group's goroutines through
// stop, waits for them, and refuses any more.
func TestCloseWaitsAndRefuses(t *testing.T) {
	var g Group
	stop := make(chan struct{})
	ended := make(chan struct{}, 2)
	for range 2 {
		assert.True(t, g.Go(func() { <-stop; ended <- struct{}{} }))
	}
	g.Close(func() { close(stop) })
	assert.Len(t, ended, 2, "Close returned only once both had ended")
	assert.False(t, g.Go(func() { t.Error("ran after Close") }))
}
