package skew

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOlder: release versions order as semantic versioning orders them;
// what is not a release is older and newer than nothing.
func TestOlder(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		older bool
	}{
		{"v1.2.0", "v1.3.0", true},
		{"v1.3.0", "v1.2.0", false},
		{"v1.2.0", "v1.2.0", false},
		{"v1.2.9", "v1.10.0", true},
		{"v1.9.0", "v2.0.0", true},
		{"v1.2.3", "v1.2.10", true},
		{"v1.3.0-rc.1", "v1.3.0", true},
		{"v1.3.0", "v1.3.0-rc.1", false},
		{"v1.3.0-rc.1", "v1.3.0-rc.2", true},
		{"v1.3.0-rc.2", "v1.3.0-rc.10", true},
		{"v1.3.0-alpha", "v1.3.0-alpha.1", true},
		{"v1.3.0-1", "v1.3.0-alpha", true},
		{"v1.3.0-beta", "v1.3.0-alpha", false},
		{"v1.2.0+dirty", "v1.2.0", false},
		{"v1.2.0", "v1.2.0+dirty", false},
		{"v1.2.0+dirty", "v1.3.0", true},
		{"v0.0.0-20260101120000-abcdef123456", "v0.0.0-20260102120000-123456abcdef", true},
		{"v1.2.4-0.20260101120000-abcdef123456", "v1.2.4", true},
		{"devel", "v1.3.0", false},
		{"v1.3.0", "devel", false},
		{"devel abcdef123456", "devel 123456abcdef", false},
		{"", "v1.3.0", false},
		{"1.2.0", "v1.3.0", false},
		{"v1.2", "v1.3.0", false},
		{"v01.2.0", "v1.3.0", false},
		{"v1.2.0-", "v1.3.0", false},
		{"v1.2.0-a..b", "v1.3.0", false},
		{"v1.2.0-ü", "v1.3.0", false},
		{"v99999999999999999999.0.0", "v1.3.0", false},
	} {
		assert.Equal(t, c.older, Older(c.a, c.b), "Older(%q, %q)", c.a, c.b)
	}
}

// FuzzOlder: no two versions are each older than the other, and none is
// older than itself.
func FuzzOlder(f *testing.F) {
	for _, s := range []string{"v1.2.0", "v1.3.0-rc.1", "v0.0.0-20260101120000-abcdef123456", "devel", "v1.2.0+x"} {
		f.Add(s, "v1.3.0")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if Older(a, b) && Older(b, a) {
			t.Fatalf("%q and %q are each older than the other", a, b)
		}
		if Older(a, a) {
			t.Fatalf("%q is older than itself", a)
		}
	})
}

// TestOf: the headers give back the peer that set them; none is ErrNone;
// a protocol that is not one number from 1 is an error.
func TestOf(t *testing.T) {
	h := http.Header{}
	_, err := Of(h)
	assert.ErrorIs(t, err, ErrNone)

	Peer{Version: "v1.2.0", Protocol: 3}.Set(h)
	p, err := Of(h)
	require.NoError(t, err)
	assert.Equal(t, Peer{Version: "v1.2.0", Protocol: 3}, p)
	assert.Equal(t, "graft v1.2.0 (protocol 3)", p.String())

	for _, bad := range [][]string{{"0"}, {"x"}, {"-2"}, {""}, {"1", "2"}} {
		h := http.Header{ProtocolHeader: bad}
		_, err := Of(h)
		assert.Error(t, err, "%q", bad)
		assert.NotErrorIs(t, err, ErrNone, "%q", bad)
	}
	h = http.Header{ProtocolHeader: {"1"}, VersionHeader: {strings.Repeat("v", 1000)}}
	p, err = Of(h)
	require.NoError(t, err)
	assert.Len(t, p.Version, maxVersion, "a long version is cut")
	assert.Equal(t, "graft of an unknown version (protocol 1)", Peer{Protocol: 1}.String())
}

// TestTransport: every request carries the client's peer, the request
// the caller made is left as it was, and every answer's peer is heard.
func TestTransport(t *testing.T) {
	var got []Peer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := Of(r.Header)
		assert.NoError(t, err)
		got = append(got, p)
		if r.URL.Path == "/old" {
			return // a server from before protocols
		}
		Peer{Version: "v1.2.0", Protocol: 1}.Set(w.Header())
	}))
	defer srv.Close()
	var heard []Peer
	hc := &http.Client{Transport: Transport(&http.Transport{}, Peer{Version: "v1.3.0", Protocol: 2}, func(p Peer) { heard = append(heard, p) })}
	defer hc.CloseIdleConnections()
	for _, path := range []string{"/new", "/old"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Empty(t, req.Header, "the caller's request is left as it was")
	}
	assert.Equal(t, []Peer{{Version: "v1.3.0", Protocol: 2}, {Version: "v1.3.0", Protocol: 2}}, got)
	assert.Equal(t, []Peer{{Version: "v1.2.0", Protocol: 1}}, heard, "only an answer that names a peer is heard")
}
