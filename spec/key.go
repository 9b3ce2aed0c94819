package spec

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"sync"
)

// DigestKey keys the digests of env values: in Fields, and so in every
// Hash and Digest, an env value is replaced by an HMAC of it under the key
// (docs/plan-format.md). Without the key, a plan, a status or a saved
// plan says nothing about an env value, not even to someone who tries
// every short value. A host keeps one in its state dir; a Spec parsed
// without one gets a fresh random key, good for nothing but comparing
// with itself.
type DigestKey [32]byte

// NewDigestKey returns a random key.
func NewDigestKey() DigestKey {
	var k DigestKey
	rand.Read(k[:]) // never fails (crypto/rand)
	return k
}

// ParseDigestKey reads a key written by Hex: 64 hex digits.
func ParseDigestKey(s string) (DigestKey, error) {
	var k DigestKey
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != len(k) {
		return k, fmt.Errorf("a digest key is %d hex digits", 2*len(k))
	}
	copy(k[:], b)
	return k, nil
}

// Hex is the key itself, in hex: a secret.
func (k DigestKey) Hex() string { return hex.EncodeToString(k[:]) }

// ID names the key without revealing it: 16 hex digits of an HMAC of a
// fixed text under the key. Records and plans carry it, so that a digest
// is only ever compared with one made under the same key.
func (k DigestKey) ID() string {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("graft digest key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// String names the key by its ID, so that printing one by mistake does
// not reveal it.
func (k DigestKey) String() string { return "digest key " + k.ID() }

// envDigest is what Fields holds for env variable name's value, as JSON:
// the string "hmac-sha256:" and the hex of an HMAC of both under the key.
// A file of 10,000 plugins has tens of thousands of env values: each HMAC
// is made with a MAC taken from envMACs, reset to the state its key left
// it in, instead of a new one, which would hash the key's two blocks
// again (bench/README.md, "Planning").
func (k DigestKey) envDigest(name, value string) string {
	m, _ := envMACs.Get().(*envMAC)
	if m == nil || m.key != k {
		m = &envMAC{key: k, mac: hmac.New(sha256.New, k[:])}
	} else {
		m.mac.Reset()
	}
	m.buf = append(append(append(append(m.buf[:0], "env\x00"...), name...), 0), value...)
	m.mac.Write(m.buf)
	sum := m.mac.Sum(m.sum[:0])
	// No character of it needs escaping: this is jsonString's result.
	m.buf = append(hex.AppendEncode(append(m.buf[:0], `"hmac-sha256:`...), sum), '"')
	out := string(m.buf)
	envMACs.Put(m)
	return out
}

// envMAC is an HMAC under key, kept for the next env value, with room for
// the text it digests and its sum.
type envMAC struct {
	key DigestKey
	mac hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// envMACs holds the envMACs not in use, on every core.
var envMACs sync.Pool

// KeyID is the ID of the key of s's digests.
func (s *Spec) KeyID() string { return s.key.ID() }

// WithKey returns a copy of s whose Fields, Hash and Digest are keyed by
// k. The copy shares s's plugins and runners, which are not changed after
// loading.
func (s *Spec) WithKey(k DigestKey) *Spec {
	c := *s
	c.key = k
	if s.idx != nil {
		c.idx = &specIndex{prev: s.idx}
	}
	return &c
}
