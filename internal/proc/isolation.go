package proc

import "fmt"

// Isolation is whether a Spawner starts the Cmds that ask for it (Isolate)
// in a PID namespace of its own.
type Isolation struct {
	// Namespace is true when it does: when this process dies, however it
	// dies, the kernel kills every process of such a Cmd's family.
	Namespace bool
	// User is true when each namespace comes with a user namespace that
	// maps only this process's uid and gid: this process is not root.
	User bool
	// Err, when Namespace is false, is why not.
	Err error
}

// NamespaceError is why a Spawner cannot start processes in PID namespaces
// of their own.
type NamespaceError struct {
	// User is true when it tried a user namespace as well, as a process
	// that is not root must.
	User bool
	Err  error
}

func (e *NamespaceError) Error() string {
	what := "a PID namespace"
	if e.User {
		what = "a user and PID namespace"
	}
	return fmt.Sprintf("cannot make %s for a plugin: %v", what, e.Err)
}

func (e *NamespaceError) Unwrap() error { return e.Err }

// Hint says what the operator can do about it.
func (e *NamespaceError) Hint() string {
	if e.User {
		return "run graft as root, or allow unprivileged user namespaces (sysctl user.max_user_namespaces, " +
			"kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns); until then, what a " +
			"plugin forks outlives a host or runner killed outright, until the next one on the same state dir stops it"
	}
	return "give graft CAP_SYS_ADMIN (a container may withhold it); until then, what a plugin forks outlives a host " +
		"or runner killed outright, until the next one on the same state dir stops it"
}
