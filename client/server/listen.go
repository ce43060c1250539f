package server

import (
	"fmt"
	"net"
)

// listen opens addr, with an error that says what to do when it is taken.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (give another address with --addr)", addr, err)
	}
	return ln, nil
}
