package guard

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/graftland/graft/internal/skew"
)

// version sets the daemon's version and protocol (Config.Self) on the
// answer to r, which passed the token check: who has no token learns
// nothing of the daemon, not even its version. It refuses a request of
// a later protocol than the daemon's, naming both versions, and one whose
// protocol header cannot be read; a request that names no protocol (curl,
// a graft from before protocols) is served as it always was.
func (g *guard) version(w http.ResponseWriter, r *http.Request) *failure {
	self := g.c.Self
	if self.Protocol == 0 {
		return nil
	}
	self.Set(w.Header())
	client, err := skew.Of(r.Header)
	switch {
	case errors.Is(err, skew.ErrNone):
		return nil
	case err != nil:
		return &failure{kind: KindBadRequest, msg: "the " + g.c.Daemon + " refused the request: " + err.Error()}
	case client.Protocol > self.Protocol:
		g.refusals.note(g.c.Log, fmt.Sprintf("refused a request of protocol %d, later than its own, %d", client.Protocol, self.Protocol), r)
		e := &skew.NewerError{Daemon: g.c.Daemon, Server: self, Client: client, Upgrade: g.c.Upgrade}
		return &failure{kind: KindNewer, msg: e.Error()}
	}
	return nil
}
