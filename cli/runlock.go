package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runLock is a training process's exclusive hold on its run folder
// (trainer.default_local_dir): two live runs writing one folder would
// overwrite each other's logs and checkpoints, and a new run deletes the
// temporary checkpoint folders it finds, which would be a live run's. Each
// rank locks a file of its own (.ragen-rank<R>.lock, flock), so a second
// run is refused at its rank 0 whatever the world sizes. The kernel drops
// the lock when the process ends, however it ends.
type runLock struct{ f *os.File }

// lockRunDir creates dir if needed and takes rank's lock in it, or says
// which live process holds it.
func lockRunDir(dir string, rank int) (*runLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	path := filepath.Join(dir, ".ragen-rank"+strconv.Itoa(rank)+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("run folder %s is in use by a live run (%s holds %s); stop that run or set trainer.default_local_dir to another folder",
				dir, who, filepath.Base(path))
		}
		return nil, fmt.Errorf("run folder: locking %s: %w", path, err)
	}
	host, _ := os.Hostname()
	note := fmt.Sprintf("pid %d on %s, rank %d, since %s\n", os.Getpid(), host, rank, time.Now().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(note), 0) // only for the message above
	}
	return &runLock{f: f}, nil
}

// release drops the lock. The file stays: removing it could let two
// processes hold locks on two files of the same name.
func (l *runLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
