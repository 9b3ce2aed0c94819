package spec

import (
	"net/netip"
	"strings"
)

// AddressKind is what an elect.address names (docs/semantics.md,
// "Floating plugins: the election").
type AddressKind int

const (
	// AddressDefault: none; this machine's best address, at elect.port.
	AddressDefault AddressKind = iota
	// AddressHostPort: HOST:PORT, published as written.
	AddressHostPort
	// AddressNetwork: a CIDR; this machine's address in it, at elect.port.
	AddressNetwork
	// AddressInterface: an interface's name; its address, at elect.port.
	AddressInterface
	// AddressBad: none of those.
	AddressBad
)

// ElectAddressKind tells what elect.address s names, with the network
// of an AddressNetwork.
func ElectAddressKind(s string) (AddressKind, netip.Prefix) {
	switch {
	case s == "":
		return AddressDefault, netip.Prefix{}
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return AddressBad, netip.Prefix{}
		}
		return AddressNetwork, p.Masked()
	case validateHostPort(s) == nil:
		return AddressHostPort, netip.Prefix{}
	case interfaceName(s):
		return AddressInterface, netip.Prefix{}
	}
	return AddressBad, netip.Prefix{}
}

// interfaceName reports whether s can name a network interface: at most
// 15 bytes (Linux's IFNAMSIZ less its NUL) of letters, digits, '-', '_'
// and '.', starting with a letter.
func interfaceName(s string) bool {
	if len(s) > 15 || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
