package instance

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCurrent(t *testing.T) {
	t.Setenv(EnvID, "")
	t.Setenv(EnvGeneration, "")
	t.Setenv(EnvPlugin, "")
	assert.Equal(t, Instance{ID: "local", Generation: 0}, Current(), "not started by graft: local, 0 (docs/semantics.md)")
	assert.Equal(t, "", Plugin())

	t.Setenv(EnvID, "2f0c6c1e-8f0a-4bd5-9d4e-6a3b2f1c0d9e")
	t.Setenv(EnvGeneration, "1")
	t.Setenv(EnvPlugin, "api")
	assert.Equal(t, Instance{ID: "2f0c6c1e-8f0a-4bd5-9d4e-6a3b2f1c0d9e", Generation: 1}, Current())
	assert.Equal(t, "api", Plugin())

	t.Setenv(EnvID, "shop.writer")
	t.Setenv(EnvGeneration, "42")
	assert.Equal(t, Instance{ID: "shop.writer", Generation: 42}, Current(), "through a runner")

	t.Setenv(EnvGeneration, "forty-two")
	assert.Equal(t, Instance{ID: "shop.writer", Generation: 0}, Current())
}
