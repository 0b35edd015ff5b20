// Package sandbox runs untrusted Python programs (a model's code answers)
// against tests, isolated from the host.
//
// Each Run starts Debian's python3 (Config.Python, /usr/bin/python3 by
// default) as PID 1 of new user, PID, network, mount, IPC and UTS
// namespaces. Before any untrusted code runs, the in-sandbox runner
// (runner.py, embedded) builds a new root on a tmpfs holding read-only
// binds of /usr and the library directories, four device nodes
// (null, zero, random, urandom), and empty writable /work and /tmp tmpfs
// mounts; it pivots into it, detaches the host tree and drops every
// capability (no_new_privs). The network namespace has only a down
// loopback. Shared memory that no process's resident memory shows cannot
// be made: the IPC namespace allows no System V segments or queues (its
// limits are 0 and /proc/sys is read-only), and a seccomp filter, in both
// modes, refuses memfd_create, shmget, shmat and msgget; there is no
// /dev/shm. Functional tests' arguments are evaluated first, in one forked
// child under the same limits (Report.ArgsError when they cannot be sent
// as JSON). Each test runs in a forked child under rlimits (CPU seconds,
// address space, file size, process count, open files) with its stdout
// and stderr captured up to Config.OutputBytes. The whole run has a
// wall-clock limit (Config.Timeout, upstream's 3 s for all tests); Go
// kills the namespace's PID 1, and so every process in it, when the
// limit plus a setup allowance passes or ctx ends.
//
// The runner gets only stdin, stdout, stderr and its report pipe: before
// the exec every other descriptor of the calling process is marked
// close-on-exec (C libraries such as libtorch and Gloo leave files and
// sockets without it), and the runner closes any extra one again as its
// first act.
//
// Expected outputs never enter the sandbox: the runner reports what each
// test printed or returned and Go judges it (Judge), so a program cannot
// read the answers from its own memory.
//
// When running as root, the sandbox's root user maps to the host's
// "nobody" (65534); an unprivileged caller maps its own uid. Where the
// kernel refuses new user namespaces, Run returns ErrNoNamespaces, which
// says so; Mode "unsafe_rlimits_only" (opt-in by that exact name) then runs
// code with rlimits and a process group only: no filesystem or network
// isolation.
package sandbox
