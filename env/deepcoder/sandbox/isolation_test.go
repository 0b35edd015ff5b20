//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// handedIn is a set of descriptors of the test process without
// close-on-exec, as libtorch and Gloo leave theirs: a host file holding a
// secret, a host directory and a connected TCP socket whose peer the test
// holds.
type handedIn struct {
	fds    []int
	ids    map[[2]uint64]string // (dev, ino) -> what
	secret string               // the file's content
	name   string               // a file name only the directory lists
	peer   net.Conn             // the socket's other end
}

func handIn(t *testing.T) *handedIn {
	t.Helper()
	dir := t.TempDir()
	h := &handedIn{ids: map[[2]uint64]string{}, secret: "host secret 7f3a", name: "only-in-the-host-dir-91c2"}
	file := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(file, []byte(h.secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, h.name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if h.peer, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.peer.Close() })
	sock, err := conn.(*net.TCPConn).File() // a dup of the socket
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for what, o := range map[string]*os.File{"file": f, "directory": d, "socket": sock} {
		t.Cleanup(func() { o.Close() })
		fd := int(o.Fd())
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0); e != 0 {
			t.Fatal(e)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		h.fds = append(h.fds, fd)
		h.ids[[2]uint64{st.Dev, st.Ino}] = what
	}
	return h
}

// probeFDs is a program that lists every open descriptor as JSON lines
// ({"fd", "dev", "ino"}) and uses each as an attacker would: reads a
// file, fchdirs into a directory and lists it, writes to a socket.
const probeFDs = `import json, os, socket, stat
for fd in range(1024):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    print(json.dumps({"fd": fd, "dev": st.st_dev, "ino": st.st_ino}))
    try:
        if stat.S_ISDIR(st.st_mode):
            os.fchdir(fd)
            print("listed", os.listdir("."))
        elif stat.S_ISREG(st.st_mode):
            print("read", os.pread(fd, 100, 0))
        elif stat.S_ISSOCK(st.st_mode):
            socket.socket(fileno=os.dup(fd)).send(b"from the sandbox")
            print("sent on", fd)
    except OSError as e:
        print("refused", fd, e)
`

// check reports the handed-in descriptors the probe's output shows open
// or used.
func (h *handedIn) check(t *testing.T, out string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l struct{ Dev, Ino uint64 }
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			if what, ok := h.ids[[2]uint64{l.Dev, l.Ino}]; ok {
				t.Errorf("the program holds the host's %s: %s", what, sc.Text())
			}
		}
	}
	if strings.Contains(out, h.secret) || strings.Contains(out, h.name) {
		t.Errorf("the program read the host's file or directory:\n%s", out)
	}
	// Whatever the program sent is in the peer's buffer by now.
	_ = h.peer.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 64)
	if n, _ := h.peer.Read(buf); n > 0 {
		t.Errorf("the program wrote to the host's socket: %q", buf[:n])
	}
}

// Descriptors the host process holds without close-on-exec never reach
// the program, in both modes: closed in Go before the exec and again by
// the runner.
func TestHandedInFDs(t *testing.T) {
	for _, mode := range []string{ModeNamespaces, ModeUnsafeRlimitsOnly} {
		t.Run(mode, func(t *testing.T) {
			s := generous(t, mode)
			h := handIn(t)
			rep, o := run1(t, s, probeFDs, "")
			if o.Status != "done" || o.Exception != "" || !strings.Contains(o.Stdout, `"fd": 1,`) {
				t.Fatalf("the probe did not run: %+v", rep)
			}
			h.check(t, o.Stdout)
		})
	}
}

// The runner alone closes them: with the Go side's sweep skipped (a
// descriptor opened by another thread between the sweep and the fork)
// they still never reach the program.
func TestRunnerClosesHandedInFDs(t *testing.T) {
	for _, mode := range []string{ModeNamespaces, ModeUnsafeRlimitsOnly} {
		t.Run(mode, func(t *testing.T) {
			s := generous(t, mode)
			s.keepHostFDs = true
			h := handIn(t)
			rep, o := run1(t, s, probeFDs, "")
			if o.Status != "done" || o.Exception != "" || !strings.Contains(o.Stdout, `"fd": 1,`) {
				t.Fatalf("the probe did not run: %+v", rep)
			}
			h.check(t, o.Stdout)
		})
	}
}

// The Go side alone closes them: after the sweep a plain child (no
// runner) does not inherit any of them, and this process can still use
// them.
func TestSweepMarksHostFDsCloseOnExec(t *testing.T) {
	python := DefaultConfig().Python
	if _, err := os.Stat(python); err != nil {
		t.Skipf("Debian python3 not installed at %s", python)
	}
	h := handIn(t)
	if err := markHostFDsCloseOnExec(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-I", "-S", "-c", probeFDs).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	h.check(t, string(out))
	for _, fd := range h.fds {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			t.Errorf("fd %d unusable after the sweep: %v", fd, err)
		}
	}
}

// Shared memory escapes neither the memory cap nor the sandbox: System V
// segments and message queues cannot be created (the IPC namespace's
// limits are 0 and seccomp refuses shmget and msgget) nor the limits
// raised again, memfd_create is refused, /dev/shm does not exist, and
// shared anonymous mappings count against the cap over all processes.
func TestSharedMemory(t *testing.T) {
	// In both modes: no System V segment or queue, no memfd.
	const refused = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
sid = libc.shmget(0, 96 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT|0600
if sid >= 0:
    print("shmget created", sid)
    libc.shmctl(sid, 0, None)  # IPC_RMID: leave nothing behind
else:
    print("shmget refused", os.strerror(ctypes.get_errno()))
qid = libc.msgget(0, 0o1600)
if qid >= 0:
    print("msgget created", qid)
    libc.msgctl(qid, 0, None)
else:
    print("msgget refused", os.strerror(ctypes.get_errno()))
try:
    os.close(os.memfd_create("x"))
    print("memfd created")
except OSError as e:
    print("memfd refused", e)
`
	// Only in namespaces (the weak mode runs as the host user, whose
	// sysctls and /dev/shm these would be): the IPC namespace's limits
	// cannot be raised again, and there is no /dev/shm.
	const nsOnly = `
for k in ("shmmax", "shmall", "shmmni", "msgmni"):
    try:
        with open("/proc/sys/kernel/" + k, "w") as f:
            f.write("4096")  # valid for each key
        print("raised", k)
    except OSError as e:
        print("cannot raise", k, e)
try:
    open("/dev/shm/x", "wb").write(b"x")
    print("devshm written")
except OSError as e:
    print("devshm refused", e)
try:
    from multiprocessing import shared_memory
    shared_memory.SharedMemory(create=True, size=96 << 20)
    print("shared_memory created")
except OSError as e:
    print("shared_memory refused", e)
`
	for _, mode := range []string{ModeNamespaces, ModeUnsafeRlimitsOnly} {
		t.Run(mode, func(t *testing.T) {
			program := refused
			if mode == ModeNamespaces {
				program += nsOnly
			}
			rep, o := run1(t, generous(t, mode), program, "")
			if o.Status != "done" || o.Exception != "" || !strings.Contains(o.Stdout, "memfd") {
				t.Fatalf("the program did not run: %+v", rep)
			}
			for _, bad := range []string{"raised", "created", "written"} {
				if strings.Contains(o.Stdout, bad) {
					t.Errorf("%s:\n%s", bad, o.Stdout)
				}
			}
		})
	}
	// Eight processes each map and fill 100 MiB of shared anonymous
	// memory (each under RLIMIT_AS); 800 MiB in all against a 256 MiB cap.
	// The program sleeps 30 s, so a missing count ends as a timeout.
	const shared = `import mmap, os, time
for i in range(8):
    if os.fork() == 0:
        m = mmap.mmap(-1, 100 << 20, flags=mmap.MAP_SHARED)
        for _ in range(100):
            m.write(b"x" * (1 << 20))
        time.sleep(30)
time.sleep(30)
`
	rep, o := run1(t, generous(t, ModeNamespaces), shared, "")
	if o.Status != "memory_limit" {
		t.Errorf("shared anonymous memory escaped the cap: %+v", rep)
	}
	if left := leftovers(t); len(left) > 0 {
		t.Errorf("sandbox processes left on the host: %v", left)
	}
}
