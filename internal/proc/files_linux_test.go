package proc

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestFiles: a Cmd's Files are the process's descriptors 3 and on, and
// with LISTEN_FDS in its environment it gets LISTEN_PID, its own pid as
// it sees it: in the Spawner's namespace as outside it.
func TestFiles(t *testing.T) {
	for _, isolate := range []bool{false, true} {
		t.Run("isolate="+strconv.FormatBool(isolate), func(t *testing.T) {
			s := NewSpawner()
			defer s.Close()
			if isolate {
				testsupport.NeedNamespace(t, s.Isolation().Err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			f, err := ln.(*net.TCPListener).File()
			require.NoError(t, err)
			defer f.Close()
			r, w, err := OutputPipe()
			require.NoError(t, err)
			defer r.Close()
			script := `echo "$$ $LISTEN_PID $LISTEN_FDS $(readlink /proc/self/fd/3) $(readlink /proc/self/fd/4 || echo none)"`
			p, err := s.Start(Cmd{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(),
				Env: append(os.Environ(), "LISTEN_FDS=1", "LISTEN_PID=1"), Output: w, Isolate: isolate, Files: []*os.File{f}})
			w.Close()
			require.NoError(t, err)
			b, err := io.ReadAll(r)
			require.NoError(t, err)
			_, err = p.Reap()
			require.NoError(t, err)
			fields := strings.Fields(string(b))
			require.Len(t, fields, 5, "%s", b)
			assert.Equal(t, fields[0], fields[1], "LISTEN_PID is the pid the program sees of itself: %s", b)
			assert.Equal(t, "1", fields[2])
			assert.True(t, strings.HasPrefix(fields[3], "socket:["), "descriptor 3 is the socket: %s", b)
			assert.Equal(t, "none", fields[4], "nothing else is passed: %s", b)
			if isolate {
				assert.NotEqual(t, strconv.Itoa(p.Pid), fields[0], "in its namespace, its pid is another")
			}
		})
	}
}
