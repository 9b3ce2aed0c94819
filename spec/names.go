package spec

// NameRule says which names ValidName accepts.
const NameRule = "lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 63 characters"

// ValidName reports whether s is a valid project, plugin or runner name.
// Such names become file names in a host's state dir, so a name that comes
// from elsewhere (a request to the host's API) must pass it before it
// reaches a path.
func ValidName(s string) bool { return validName(s) }
