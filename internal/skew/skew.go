// Package skew is what graft's programs tell each other of their
// versions, so that a CLI, a host and a runner of different releases
// (docs/architecture.md, "Version skew") are told apart rather than
// misread: graft's release version, the headers that carry it and an
// API's protocol number on every request and answer, the order of
// release versions, and the refusal of a request of a later protocol.
package skew

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// release is graft's release version, set when a release is built:
//
//	go build -ldflags "-X github.com/graftland/graft/internal/skew.release=v1.2.3" ./cmd/graft
var release = ""

// module is graft's module path, to find its version among a program's
// dependencies.
const module = "github.com/graftland/graft"

// Version is graft's release version ("v1.2.3"); else the version of
// graft's module that the Go toolchain recorded in the program (go
// install of a tag, or a pseudo-version for a commit); else "devel",
// with the VCS revision when one was recorded.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	if release != "" {
		return release
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	mod := &info.Main
	if mod.Path != module {
		for _, d := range info.Deps {
			if d.Path == module {
				mod = d
			}
		}
	}
	if v := mod.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
})

// The headers of every request a graft client sends and every answer a
// graft daemon gives (docs/runner-api.md, "Versions").
const (
	VersionHeader  = "Graft-Version"  // the sender's graft version, as Version says it
	ProtocolHeader = "Graft-Protocol" // the protocol of the API the sender speaks, from 1
)

// maxVersion bounds the version read from a header: it is printed.
const maxVersion = 128

// Peer is one end of a conversation over an API: the graft it runs and
// the protocol of the API it speaks.
type Peer struct {
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
}

func (p Peer) String() string {
	v := p.Version
	if v == "" {
		v = "of an unknown version"
	}
	return fmt.Sprintf("graft %s (protocol %d)", v, p.Protocol)
}

// Set writes p's headers into h.
func (p Peer) Set(h http.Header) {
	h.Set(VersionHeader, p.Version)
	h.Set(ProtocolHeader, strconv.Itoa(p.Protocol))
}

// ErrNone is headers that name no protocol: a client such as curl, or a
// graft from before protocols.
var ErrNone = errors.New("no " + ProtocolHeader + " header")

// Of is the peer that h, a request's or an answer's headers, names;
// ErrNone when they name no protocol, another error when the protocol is
// not a number from 1.
func Of(h http.Header) (Peer, error) {
	raw := h.Values(ProtocolHeader)
	if len(raw) == 0 {
		return Peer{}, ErrNone
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw[0]))
	if err != nil || n < 1 || len(raw) > 1 {
		return Peer{}, fmt.Errorf("%s: want one number from 1, got %q", ProtocolHeader, strings.Join(raw, ", "))
	}
	v := h.Get(VersionHeader)
	if len(v) > maxVersion {
		v = v[:maxVersion]
	}
	return Peer{Version: v, Protocol: n}, nil
}
