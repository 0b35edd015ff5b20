package cli

import "syscall"

// rankProcAttr makes a rank receive SIGKILL when its launcher dies: ranks
// left running would keep training into a run folder that a relaunch then
// writes too.
func rankProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
