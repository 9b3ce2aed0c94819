package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBaseEnv(t *testing.T) {
	parent := []string{
		"SECRET=hunter2", "PATH=/opt/bin:/usr/bin", "HOME=/home/op", "LANG=C.UTF-8", "TZ=Europe/Paris",
		"GRAFT_STATE_DIR=/srv/.graft", "graft_lower=x", "AWS_SECRET_ACCESS_KEY=k", "HOME=/home/again", "LC_ALL=C",
	}
	assert.Equal(t, []string{"PATH=/opt/bin:/usr/bin", "HOME=/home/again", "LANG=C.UTF-8", "TZ=Europe/Paris", "GRAFT_STATE_DIR=/srv/.graft"},
		BaseEnv(parent), "the last HOME wins; nothing but the base and GRAFT_ variables")
	assert.Equal(t, []string{"PATH=" + DefaultPath}, BaseEnv([]string{"SECRET=x"}), "PATH has a default")
	assert.Equal(t, []string{"PATH="}, BaseEnv([]string{"PATH="}), "an empty PATH is set, so kept")
}

func TestInherited(t *testing.T) {
	parent := []string{"SECRET=hunter2", "AWS_REGION=eu-west-1", "EMPTY=", "SSL_CERT_FILE=/etc/ca.pem"}
	assert.Equal(t, []string{"SSL_CERT_FILE=/etc/ca.pem", "AWS_REGION=eu-west-1", "EMPTY="},
		Inherited(parent, []string{"SSL_CERT_FILE", "NOT_SET", "AWS_REGION", "EMPTY"}))
	assert.Nil(t, Inherited(parent, nil))
}
