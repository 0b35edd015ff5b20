//go:build !linux

package sandbox

import "syscall"

// Namespaces exist only on Linux: elsewhere the start fails and Run
// reports ErrNoNamespaces unless the weak mode is chosen.
func sysProcAttr(mode string) *syscall.SysProcAttr {
	if mode == ModeNamespaces {
		return nil
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// markHostFDsCloseOnExec has no descriptor listing to walk here; the
// runner closes every extra descriptor as its first act.
func markHostFDsCloseOnExec() error { return nil }
