// Package privsock listens on unix sockets that only their owner may use.
package privsock
