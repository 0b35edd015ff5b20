package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// markHostFDsCloseOnExec sets close-on-exec on every descriptor of this
// process above stderr, so that starting the runner hands it only the
// descriptors the exec.Cmd names. Go opens its own descriptors with
// close-on-exec, but C libraries in the same process (libtorch, Gloo's
// sockets) do not always, and an inherited file, directory or socket would
// reach the untrusted program. The runner closes every extra descriptor
// again as its first act, which also covers one opened by another thread
// between this sweep and the fork. Setting the flag does not affect the
// descriptor's use in this process.
func markHostFDsCloseOnExec() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("sandbox: listing this process's descriptors: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("sandbox: listing this process's descriptors: %w", err)
	}
	self := int(d.Fd())
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == self {
			continue
		}
		// A descriptor closed since the listing gives EBADF: nothing to do.
		flags, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
		if e != 0 || flags&syscall.FD_CLOEXEC != 0 {
			continue
		}
		syscall.CloseOnExec(fd)
	}
	return nil
}

func sysProcAttr(mode string) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if mode != ModeNamespaces {
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		// Root maps the sandbox's root to nobody, so host permission
		// checks and RLIMIT_NPROC (not enforced for host root) apply.
		uid, gid = 65534, 65534
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// Become the namespace's root (the mapped id) before exec, so the
	// runner holds capabilities inside its namespaces only.
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
	return a
}
