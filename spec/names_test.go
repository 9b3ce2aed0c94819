package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidName(t *testing.T) {
	for _, s := range []string{"a", "api", "0cache", "web-1", "my_db", strings.Repeat("x", 63)} {
		assert.True(t, ValidName(s), "%q", s)
	}
	for _, s := range []string{"", "..", ".", "../etc/passwd", "a/b", "-a", "_a", "Api", "a.log", "a b", "a\x00", strings.Repeat("x", 64)} {
		assert.False(t, ValidName(s), "%q", s)
	}
}
