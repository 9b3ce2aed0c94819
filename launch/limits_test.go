package launch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessFieldsOnTheWire: user, group, umask and limits travel as the
// runner API documents them, unlimited included, and read back as sent;
// a Spec without them writes none of them.
func TestProcessFieldsOnTheWire(t *testing.T) {
	s := Spec{Command: []string{"db"}, User: "postgres", Group: "999", Umask: "027",
		Limits: map[string]Limit{"nofile": {Soft: 1024, Hard: 4096}, "core": {Soft: 0, Hard: Unlimited}}}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"command":["db"],"user":"postgres","group":"999","umask":"027",
		"limits":{"core":{"soft":"0","hard":"unlimited"},"nofile":{"soft":"1024","hard":"4096"}}}`, string(b))
	var back Spec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, s, back)
	assert.NoError(t, back.Validate())

	b, err = json.Marshal(Spec{Command: []string{"db"}})
	require.NoError(t, err)
	assert.Equal(t, `{"command":["db"]}`, string(b))

	assert.Error(t, json.Unmarshal([]byte(`{"limits":{"core":{"soft":"-1","hard":"1"}}}`), &back))
}

// TestProcessFieldsRules: the rules of user, group, umask and limits, as
// a runner checks a start with them.
func TestProcessFieldsRules(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{User: "a b"}, `user: bad user "a b": want a name or a number`},
		{Spec{Group: "4294967296"}, `group: bad group id 4294967296: want a number below 4294967295`},
		{Spec{Umask: "0o7"}, `umask: bad umask "0o7": want octal digits from "000" to "777", such as "007"`},
		{Spec{Limits: map[string]Limit{"nofile": {Soft: 2, Hard: 1}}}, `limits.nofile: soft 2 is above hard 1`},
		{Spec{Limits: map[string]Limit{"files": {}}}, `limits.files: unknown resource limit "files"`},
	} {
		c.s.Command = []string{"x"}
		err := c.s.Validate()
		require.Error(t, err, "%+v", c.s)
		assert.Contains(t, err.Error(), c.want)
	}
	ok := Spec{Command: []string{"x"}, User: "0", Group: "wheel", Umask: "0077",
		Limits: map[string]Limit{"stack": {Soft: Unlimited, Hard: Unlimited}}}
	assert.NoError(t, ok.Validate())
}
