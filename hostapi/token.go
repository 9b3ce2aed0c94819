package hostapi

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrUnauthorized is returned when a host refuses the client's token.
var ErrUnauthorized = errors.New("the host refused the request: bad or missing token")

// ReadToken reads a token file: its content, trimmed; empty is an error.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s: empty token", path)
	}
	return tok, nil
}
