package spec

import (
	"fmt"
	"strings"

	"github.com/graftland/graft/instance"
)

// maxEnvFile bounds an env file: a file of settings, not of data.
const maxEnvFile = 1 << 20

// parseEnvFile reads the dotenv format (README, "Env files"): KEY=value
// lines, an optional "export " prefix, values bare, 'single-quoted' as
// they are, or "double-quoted" with \n, \t, \", \\ and \$ escapes; #
// comments (on a line of their own, or after a bare value and a space)
// and blank lines. The error of a bad line says its number, for
// file:line; it never quotes a value.
func parseEnvFile(data string) (map[string]string, error) {
	out := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' {
			continue
		}
		n := i + 1
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return nil, lineError(n, "want KEY=value")
		}
		if !envKeyRE.MatchString(key) {
			// Not quoted: a file that is no env file (a token's) would
			// have its content in the message.
			return nil, lineError(n, "bad name: a name is letters, digits and _, not starting with a digit")
		}
		if instance.Reserved(key) {
			return nil, lineError(n, key+": the GRAFT_ prefix is reserved")
		}
		val = strings.TrimLeft(val, " \t")
		v, used, err := envValue(val, lines[i+1:])
		if err != nil {
			return nil, lineError(n, key+": "+err.Error())
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, lineError(n, key+": a NUL byte, which no environment can hold")
		}
		i += used
		out[key] = v
	}
	return out, nil
}

func lineError(n int, msg string) error { return fmt.Errorf("line %d: %s", n, msg) }

// envValue reads one value that begins val; a quoted one may go on over
// the lines of rest, and used says how many it took.
func envValue(val string, rest []string) (v string, used int, err error) {
	if val == "" || (val[0] != '"' && val[0] != '\'') {
		if i := strings.Index(val, " #"); i >= 0 {
			val = val[:i]
		}
		return strings.TrimSpace(val), 0, nil
	}
	q := val[0]
	text := val[1:]
	for {
		if end := closing(text, q); end >= 0 {
			if tail := strings.TrimSpace(text[end+1:]); tail != "" && tail[0] != '#' {
				return "", 0, fmt.Errorf("text after the closing quote")
			}
			if q == '\'' {
				return text[:end], used, nil
			}
			return unescape(text[:end]), used, nil
		}
		if used == len(rest) {
			return "", 0, fmt.Errorf("no closing %c", q)
		}
		text += "\n" + rest[used]
		used++
	}
}

// closing is the index of the quote that ends text, skipping escaped ones
// in double quotes; -1 when there is none.
func closing(text string, q byte) int {
	for i := 0; i < len(text); i++ {
		switch {
		case q == '"' && text[i] == '\\':
			i++
		case text[i] == q:
			return i
		}
	}
	return -1
}

func unescape(s string) string {
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\"`, `"`, `\\`, `\`, `\$`, `$`)
	return r.Replace(s)
}
