package elect

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

func TestNew(t *testing.T) {
	dir := t.TempDir()
	e, err := New(Config{Dir: dir, Instance: "relay", HostID: "S001", Address: "10.0.0.1:9530"})
	require.NoError(t, err)
	defer e.Close()
	assert.Equal(t, 15*time.Second, e.cfg.TTL, "ttl's default in docs/semantics.md")
	assert.Equal(t, 3*time.Second, e.cfg.Renew, "renew's default in docs/semantics.md")
	assert.Equal(t, 2*time.Second, e.cfg.Poll, "poll's default in docs/semantics.md")
	assert.Equal(t, 15*time.Second, e.cfg.LockStale, "lockStale's default in docs/semantics.md")
	// The loader fills in a spec's defaults; the Go API's are the same.
	assert.Equal(t, spec.DefaultElectTTL, DefaultTTL, "ttl: spec's default")
	assert.Equal(t, spec.DefaultElectRenew, DefaultRenew, "renew: spec's default")
	assert.Equal(t, spec.DefaultElectPoll, DefaultPoll, "poll: spec's default")
	assert.Equal(t, spec.DefaultLockStale, DefaultLockStale, "lockStale: spec's default")

	ok := Config{Dir: dir, Instance: "relay", HostID: "S001", Address: "10.0.0.1:9530"}
	for field, edit := range map[string]func(*Config){
		"Dir":       func(c *Config) { c.Dir = "" },
		"Instance":  func(c *Config) { c.Instance = "../relay" },
		"HostID":    func(c *Config) { c.HostID = "" },
		"Address":   func(c *Config) { c.Address = "" },
		"TTL":       func(c *Config) { c.TTL = -time.Second },
		"Renew":     func(c *Config) { c.Renew = DefaultTTL },
		"Poll":      func(c *Config) { c.Poll = time.Minute },
		"LockStale": func(c *Config) { c.LockStale = -1 },
	} {
		cfg := ok
		edit(&cfg)
		_, err := New(cfg)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%s: %v", field, err)
		assert.Equal(t, field, ce.Field)
	}
	for _, name := range []string{`a\b`, "a/b", "c:x", ".", ".."} {
		cfg := ok
		cfg.Instance = name
		_, err := New(cfg)
		assert.Error(t, err, name)
	}
	cfg := ok
	cfg.Dir = dir + "/missing"
	_, err = New(cfg)
	assert.Error(t, err)
}
