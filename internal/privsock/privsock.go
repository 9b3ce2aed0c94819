// Package privsock keeps graft's unix sockets their owner's alone: it
// listens on sockets of mode 0600, keeps the sockets that do not fit in
// their state dir in a directory only their user may enter, and dials
// only sockets whose listener runs as the same user, so that graft never
// sends a spec, or its secrets, to another user's process.
package privsock
