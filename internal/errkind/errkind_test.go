package errkind

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type outer struct {
	Name string `json:"name"`
	Err  error  `json:"-"`
}

func (e *outer) Error() string { return "outer " + e.Name }
func (e *outer) Unwrap() error { return e.Err }

type inner struct {
	N int `json:"n"`
}

func (e *inner) Error() string { return fmt.Sprint("inner ", e.N) }

type list []string

func (l list) Error() string { return fmt.Sprint([]string(l)) }

var (
	errGone   = errors.New("gone")
	kindOuter = Type("test-outer", http.StatusConflict, (*outer)(nil), true)
	kindInner = Type("test-inner", http.StatusTeapot, (*inner)(nil), true)
	kindList  = Type("test-list", http.StatusBadRequest, list(nil), false)
	kindGone  = Sentinel("test-gone", http.StatusGone, errGone)
	kindNamed = Define("test-named", http.StatusNotFound)
)

func TestOf(t *testing.T) {
	in := &inner{N: 7}
	out := &outer{Name: "o", Err: in}
	k, e := Of(fmt.Errorf("wrapped: %w", out))
	assert.Same(t, kindOuter, k, "the outermost error that has a kind")
	assert.Same(t, out, e)

	k, e = Of(errors.Join(errors.New("plain"), fmt.Errorf("x: %w", in)))
	assert.Same(t, kindInner, k, "through Unwrap() []error")
	assert.Same(t, in, e)

	k, _ = Of(fmt.Errorf("y: %w", errGone))
	assert.Same(t, kindGone, k)
	k, _ = Of(list{"a"})
	assert.Same(t, kindList, k, "a value type")
	k, e = Of(errors.New("nothing"))
	assert.Nil(t, k)
	assert.Nil(t, e)
	assert.Nil(t, Exact(fmt.Errorf("z: %w", in)), "Exact looks at the error itself")
}

func TestRoundTrip(t *testing.T) {
	d, err := kindInner.Detail(&inner{N: 3})
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":3}`, string(d))
	back := Lookup("test-inner").New(d)
	var got *inner
	require.ErrorAs(t, back, &got)
	assert.Equal(t, 3, got.N)

	assert.Nil(t, kindInner.New(json.RawMessage(`{"n":"x"}`)), "a detail that does not decode")
	assert.Nil(t, kindInner.New(nil), "a typed kind with detail needs it")
	assert.Same(t, errGone, kindGone.New(nil))
	assert.Nil(t, kindNamed.New(nil), "a kind known by name has no type")
	assert.Nil(t, kindList.New(nil), "a value type without detail")
	d, err = kindList.Detail(list{"a"})
	require.NoError(t, err)
	assert.Nil(t, d, "no detail travels")
}

func TestDeclaredOnce(t *testing.T) {
	assert.Panics(t, func() { Define("test-named", 400) })
	assert.Panics(t, func() { Type("test-other", 400, (*inner)(nil), true) })
	assert.Panics(t, func() { Define(BadRequest, 400) }, "HTTP's own kinds are declared here")
}

func TestStatusOf(t *testing.T) {
	assert.Equal(t, http.StatusNotFound, StatusOf("test-named", 500))
	assert.Equal(t, http.StatusUnauthorized, StatusOf(Unauthorized, 500))
	assert.Equal(t, 599, StatusOf("no-such-kind", 599))
	assert.Nil(t, Lookup("no-such-kind"))
}
