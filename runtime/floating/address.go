package floating

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/graftland/graft/spec"
)

// The address a host publishes as its leader's, for consumers on other
// machines (docs/semantics.md, "Floating plugins: the election"):
// elect.address as written when it is HOST:PORT; else an address of this
// machine at elect.port, in the network (a CIDR) or on the interface
// elect.address names, else the first of a private range (10/8,
// 172.16/12, 192.168/16, fc00::/7), else the first other global one.
// Loopback is published only when written: another machine would reach
// itself there.

// ifaceAddrs is one interface's name and addresses.
type ifaceAddrs struct {
	name  string
	addrs []netip.Addr
}

// publishAddress is the address a host publishes for e's leader.
func publishAddress(e *spec.Elect) (string, error) {
	kind, _ := spec.ElectAddressKind(e.Address)
	if kind == spec.AddressHostPort {
		return e.Address, nil
	}
	ip, err := pickAddress(machineAddrs(), e.Address)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(e.Port)), nil
}

// machineAddrs lists this machine's interfaces with their addresses.
func machineAddrs() []ifaceAddrs {
	ifs, _ := net.Interfaces()
	var out []ifaceAddrs
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 {
			continue
		}
		as, _ := i.Addrs()
		ia := ifaceAddrs{name: i.Name}
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					ia.addrs = append(ia.addrs, ip.Unmap())
				}
			}
		}
		out = append(out, ia)
	}
	return out
}

// pickAddress chooses among ifs' addresses as prefer (elect.address: a
// CIDR, an interface's name, or empty) says.
func pickAddress(ifs []ifaceAddrs, prefer string) (netip.Addr, error) {
	var candidates []netip.Addr
	switch kind, network := spec.ElectAddressKind(prefer); kind {
	case spec.AddressNetwork:
		for _, i := range ifs {
			for _, a := range i.addrs {
				if network.Contains(a) {
					candidates = append(candidates, a)
				}
			}
		}
		if len(candidates) == 0 {
			return netip.Addr{}, fmt.Errorf("elect.address %s: no address of this machine is in that network", prefer)
		}
		return best(candidates, true), nil
	case spec.AddressInterface:
		for _, i := range ifs {
			if i.name == prefer {
				if len(i.addrs) == 0 {
					return netip.Addr{}, fmt.Errorf("elect.address %s: the interface has no address", prefer)
				}
				return best(i.addrs, true), nil
			}
		}
		return netip.Addr{}, fmt.Errorf("elect.address %s: no interface of this machine has that name (a host name needs a port: HOST:PORT)", prefer)
	}
	for _, i := range ifs {
		candidates = append(candidates, i.addrs...)
	}
	if a := best(candidates, false); a.IsValid() {
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("no address of this machine to publish but loopback, which would point other hosts at themselves: set elect.address (127.0.0.1:PORT when every host that shares the election is this machine)")
}

// best is the address to publish of as: private IPv4, then private IPv6,
// then other global IPv4, then IPv6, in their order; loopback and
// link-local ones only when loopbackOK, as a last resort. The zero Addr
// when none.
func best(as []netip.Addr, loopbackOK bool) netip.Addr {
	rank := func(a netip.Addr) int {
		switch {
		case a.IsPrivate() && a.Is4():
			return 0
		case a.IsPrivate():
			return 1
		case a.IsGlobalUnicast() && a.Is4():
			return 2
		case a.IsGlobalUnicast():
			return 3
		case loopbackOK:
			return 4
		}
		return -1
	}
	var pick netip.Addr
	pr := 5
	for _, a := range as {
		if r := rank(a); r >= 0 && r < pr {
			pick, pr = a, r
		}
	}
	return pick
}
