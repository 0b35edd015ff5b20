package sandbox

import (
	"os"
	"syscall"
)

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
