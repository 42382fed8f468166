// Package procgroup starts child processes in a process group of their own and signals the
// whole group, so that stopping a server or a function's bootstrap also stops what it started
// (node's workers, a shell's children, a runtime's helpers). On Linux the kernel also kills
// the group's leader when the calling process dies first (PR_SET_PDEATHSIG), so a crashed or
// killed klt or test binary leaves no server behind.
//
// The order of calls matters: [Set] before cmd.Start; [Terminate], [Kill] and [KillGroup]
// only while the leader has not been reaped (before cmd.Wait returns), since a reaped
// process's id may already belong to someone else. [KillGroup] is the exception the name
// says: it signals the group alone, for what is left after its leader exited and was reaped
// by a caller who knows that no new group took its id (the group lives while any member
// does, so its id cannot be reused).
//
// Off Unix there are no process groups: [Set] does nothing, [Terminate] and [Kill] kill the
// process itself, and [KillGroup] does nothing.
package procgroup
