//go:build !linux

package cli

import "syscall"

// rankProcAttr: only Linux has a parent-death signal; elsewhere a rank
// outlives a killed launcher (the run folder's lock still refuses a
// second run while it lives).
func rankProcAttr() *syscall.SysProcAttr { return nil }
