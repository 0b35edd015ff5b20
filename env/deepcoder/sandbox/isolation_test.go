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
