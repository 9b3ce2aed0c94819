//go:build linux

package host

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// TestFloatingEpochExhausted: a floating plugin whose lease has had the
// largest epoch is never started with a wrapped generation: its start
// fails at once with the *elect.ExhaustedError, not after the ttl, and it
// shows failed with that error; the host serves on.
func TestFloatingEpochExhausted(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	last := elect.Lease{Holder: "gone", Address: "127.0.0.1:1", Epoch: math.MaxInt64, Released: true}
	b, err := json.Marshal(last)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(shared, "shop.relay.lease.json"), b, 0o644))

	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	src := testsupport.Source(dir, "name: shop\nplugins:\n  relay:\n    run: floating\n    command: [sleep, '60']\n    elect: {dir: shared, address: '127.0.0.1:1'}\n")
	began := time.Now()
	_, err = h.Apply(context.Background(), ApplyRequest{Source: src}, Report{})
	var exhausted *elect.ExhaustedError
	require.ErrorAs(t, err, &exhausted)
	assert.Less(t, time.Since(began), 5*time.Second, "at once, not after ttl and poll")
	st := h.Status()
	require.Len(t, st.Plugins, 1)
	assert.Equal(t, string(plan.Failed), st.Plugins[0].Status)
	assert.Contains(t, st.Plugins[0].LastError, "the lease has had epoch 9223372036854775807, the largest there is")
	l, _, err := elect.Read(shared, "shop.relay")
	require.NoError(t, err)
	assert.Equal(t, last, l, "the lease is left as it was")
}
