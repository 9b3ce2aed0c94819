package spec

import (
	"strconv"
	"strings"
)

// NameRule says which names ValidName accepts.
const NameRule = "lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 63 characters"

// ValidName reports whether s is a valid project, plugin or runner name.
// Such names become file names in a host's state dir, so a name that comes
// from elsewhere (a request to the host's API) must pass it before it
// reaches a path.
func ValidName(s string) bool { return validName(s) }

// MaxReplicas bounds a plugin's replicas.
const MaxReplicas = 100

// ReplicaName is the name of replica i of the plugin the file names name:
// api/2.
func ReplicaName(name string, i int) string { return name + "/" + strconv.Itoa(i) }

// SplitReplica is the file's name of the plugin called name and its
// replica number: api and 2 for api/2; name and 0 for a plugin that is no
// replica, or a name that is none.
func SplitReplica(name string) (string, int) {
	base, num, ok := strings.Cut(name, "/")
	if !ok {
		return name, 0
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 1 || i > MaxReplicas || strconv.Itoa(i) != num {
		return name, 0
	}
	return base, i
}

// ValidPlugin reports whether s can name a plugin of a loaded spec: a
// valid name, or a replica of one (api/2). Such a name, made a file name
// with FileName, names no file outside its directory.
func ValidPlugin(s string) bool {
	base, i := SplitReplica(s)
	return validName(base) && (i > 0 || base == s)
}

// PluginFileName is the base of the files a state dir keeps for plugin
// name (its log): the name itself, with a replica's / made @ (api@2).
func PluginFileName(name string) string { return strings.Replace(name, "/", "@", 1) }
