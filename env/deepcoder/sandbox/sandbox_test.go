package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testSandbox is a sandbox with a 1 s budget (what hostile programs
// cost); generous reports a 10 s one for runs that must not time out even
// on a loaded machine.
func testSandbox(t *testing.T, mode string) *Sandbox { return newTestSandbox(t, mode, time.Second) }

func generous(t *testing.T, mode string) *Sandbox { return newTestSandbox(t, mode, 10*time.Second) }

func newTestSandbox(t *testing.T, mode string, timeout time.Duration) *Sandbox {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Mode = mode
	cfg.Timeout = timeout
	cfg.MemoryBytes = 256 << 20
	cfg.OutputBytes = 64 << 10
	if _, err := os.Stat(cfg.Python); err != nil {
		t.Skipf("Debian python3 not installed at %s (apt-get install python3-minimal)", cfg.Python)
	}
	cfg.Python = markedPython(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(context.Background()); errors.Is(err, ErrNoNamespaces) {
		t.Skipf("this kernel refuses user namespaces: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	return s
}

func run1(t *testing.T, s *Sandbox, program, input string) (Report, Outcome) {
	t.Helper()
	rep, err := s.Run(context.Background(), Job{Program: program, Tests: []Test{{Input: input}, {Input: "after"}}})
	if err != nil {
		t.Fatal(err)
	}
	return rep, rep.Outcomes[0]
}

var (
	markOnce sync.Once
	mark     string
)

// markedPython is a symlink to Debian's python3 under a name unique to
// this test process: every process a sandbox of this test starts carries
// it as argv[0], so leftovers can be told from other programs' (another
// package's tests may run sandboxes at the same time).
func markedPython(t *testing.T) string {
	markOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ragen-sbtest-")
		if err == nil {
			_ = os.Chmod(dir, 0o755)
			link := filepath.Join(dir, "python3")
			if os.Symlink(DefaultConfig().Python, link) == nil {
				mark = link
			}
		}
	})
	if mark == "" {
		t.Fatal("cannot make the marked python symlink")
	}
	return mark
}

// leftovers lists live processes started by this test's sandboxes: after a
// run none may be left.
func leftovers(t *testing.T) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || mark == "" {
			continue
		}
		if argv0, _, _ := strings.Cut(string(b), "\x00"); argv0 == mark {
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				continue // a zombie waiting for its reaper holds no resources
			}
			out = append(out, e.Name())
		}
	}
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mark != "" {
		os.RemoveAll(filepath.Dir(mark))
	}
	os.Exit(code)
}

func TestRunsCode(t *testing.T) {
	s := generous(t, ModeNamespaces)
	rep, err := s.Run(context.Background(), Job{
		Program:  "import sys\ndef add(a, b):\n    return a + b\nif __name__ == '__main__':\n    print(sum(map(int, sys.stdin.read().split())))",
		FuncName: "add",
		Tests:    []Test{{Input: "1 2 3\n"}, {Input: "1\n2\n", Functional: true}, {Input: []any{"a", "b"}, Functional: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{rep.Outcomes[0].Stdout, rep.Outcomes[1].Result, rep.Outcomes[2].Result}
	if got[0] != "6\n" || got[1] != "3" || got[2] != "ab" || rep.Crashed || rep.TimedOut {
		t.Fatalf("%q %+v", got, rep)
	}
}

func TestHostile(t *testing.T) {
	s := testSandbox(t, ModeNamespaces)
	host := t.TempDir()
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(host, "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	port := ln.Addr().(*net.TCPAddr).Port

	// the memory cap over all processes must stop "many allocators" before
	// its timeout: with 1 s a loaded machine forks and fills too slowly
	// (the program sleeps 30 s, so a missing cap still fails at 10 s)
	slow := generous(t, ModeNamespaces)
	cases := []struct {
		name, program string
		check         func(Report, Outcome) bool
	}{
		{"infinite loop", "while True:\n    pass", func(r Report, o Outcome) bool { return o.Status == "timeout" && r.TimedOut }},
		{"sleep past timeout", "import time\ntime.sleep(60)", func(r Report, o Outcome) bool { return o.Status == "timeout" && r.TimedOut }},
		{"fork bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
			func(r Report, o Outcome) bool { return o.Status == "timeout" || o.Status == "memory_limit" }},
		{"many allocators", "import os, time\nfor i in range(8):\n    if os.fork() == 0:\n        x = b'x' * (100 << 20)\n        time.sleep(30)\ntime.sleep(30)",
			func(r Report, o Outcome) bool { return o.Status == "memory_limit" }},
		{"huge allocation", "x = bytearray(8 << 30)\nprint('allocated')",
			func(r Report, o Outcome) bool { return strings.HasPrefix(o.Exception, "MemoryError") && o.Stdout == "" }},
		{"huge output", "while True:\n    print('x' * 10000)", func(r Report, o Outcome) bool { return o.Status == "output_limit" }},
		{"huge file", "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * 65536)",
			func(r Report, o Outcome) bool {
				return o.Status == "done" && (o.Signal == int(syscall.SIGXFSZ) || o.Exception != "")
			}},
		{"write outside its folder", fmt.Sprintf("for p in [%q, '/usr/pwned', '/pwned', '/etc/pwned']:\n    try:\n        open(p, 'w').write('x')\n        print('wrote', p)\n    except OSError as e:\n        pass\nopen(%q, 'w')", filepath.Join(host, "pwned"), filepath.Join(host, "pwned")),
			func(r Report, o Outcome) bool { return o.Exception != "" && !strings.Contains(o.Stdout, "wrote") }},
		{"read host files", fmt.Sprintf("for p in ['/etc/passwd', '/etc/hostname', '/proc/1/root/etc/passwd']:\n    try:\n        print(open(p).read()[:20])\n    except OSError:\n        pass\nprint(open(%q).read())", secret),
			func(r Report, o Outcome) bool {
				return o.Exception != "" && !strings.Contains(o.Stdout, "root:") && !strings.Contains(o.Stdout, "host secret")
			}},
		{"open a socket", fmt.Sprintf("import socket\ns = socket.create_connection(('127.0.0.1', %d), timeout=1)\nprint('connected')", port),
			func(r Report, o Outcome) bool { return o.Exception != "" && o.Stdout == "" }},
		{"kill its parent", fmt.Sprintf("import os, signal\nfor pid in (os.getppid(), 1, %d, -1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\nos.kill(%d, signal.SIGKILL)", victim.Process.Pid, victim.Process.Pid),
			func(r Report, o Outcome) bool {
				return o.Exception != "" && !r.Crashed && r.Outcomes[1].Status == "done"
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := s
			if c.name == "many allocators" {
				sb = slow
			}
			start := time.Now()
			rep, o := run1(t, sb, c.program, "")
			if !c.check(rep, o) {
				t.Errorf("not stopped as expected: %+v", rep)
			}
			if el := time.Since(start); el > sb.cfg.Timeout+sb.cfg.SetupAllowance+2*time.Second {
				t.Errorf("took %v", el)
			}
			if left := leftovers(t); len(left) > 0 {
				t.Errorf("sandbox processes left on the host: %v", left)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(host, "pwned")); err == nil {
		t.Error("the program wrote into a host folder")
	}
	select {
	case <-accepted:
		t.Error("the program reached a host socket")
	default:
	}
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a host process was killed: %v", err)
	}
	// The sandbox still works after all of it.
	_, o := run1(t, generous(t, ModeNamespaces), "print(input())", "ok")
	if o.Stdout != "ok\n" {
		t.Errorf("after hostile runs: %+v", o)
	}
}

func TestWeakModeRunsCode(t *testing.T) {
	rep, o := run1(t, generous(t, ModeUnsafeRlimitsOnly), "import os\nprint(input(), os.getcwd().startswith(os.path.realpath(os.environ.get('TMPDIR', '/tmp'))))", "hi")
	if o.Stdout != "hi True\n" || rep.Crashed {
		t.Fatalf("%+v", rep)
	}
	rep, o = run1(t, testSandbox(t, ModeUnsafeRlimitsOnly), "while True:\n    pass", "")
	if o.Status != "timeout" {
		t.Fatalf("%+v", rep)
	}
}

func TestConfigErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Mode = "unsafe"
	cfg.Timeout = 0
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `mode "unsafe"`) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("%v", err)
	}
	cfg = DefaultConfig()
	cfg.Python = "/nonexistent/python3"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") || !strings.Contains(err.Error(), "apt-get install") {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(ErrNoNamespaces.Error(), ModeUnsafeRlimitsOnly) {
		t.Fatal("the namespace error must name the opt-in mode")
	}
}

func TestContextCancel(t *testing.T) {
	s := testSandbox(t, ModeNamespaces)
	ctx, cancel := context.WithCancel(context.Background())
	seen := make(chan bool, 1)
	go func() {
		// The leftover check must see a running sandbox, or it proves
		// nothing: wait (bounded) until it does, then cancel.
		ok := false
		for i := 0; i < 500 && !ok; i++ {
			ok = len(leftovers(t)) > 0
			time.Sleep(10 * time.Millisecond)
		}
		seen <- ok
		cancel()
	}()
	_, err := s.Run(ctx, Job{Program: "import time\ntime.sleep(60)", Tests: []Test{{Input: ""}}})
	if !<-seen {
		t.Error("the leftover check never saw the running sandbox")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if left := leftovers(t); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// The kernel's refusals map to ErrNoNamespaces, which names the opt-in
// weaker mode; other start failures do not.
func TestStartErrorClassification(t *testing.T) {
	s := &Sandbox{cfg: DefaultConfig()}
	for _, e := range []error{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, &os.SyscallError{Syscall: "clone", Err: syscall.EPERM}} {
		err := s.startError(&os.PathError{Op: "fork/exec", Path: "/usr/bin/python3", Err: e})
		if !errors.Is(err, ErrNoNamespaces) || !strings.Contains(err.Error(), "sandbox_mode: unsafe_rlimits_only") {
			t.Errorf("%v: %v", e, err)
		}
	}
	if err := s.startError(syscall.ENOMEM); errors.Is(err, ErrNoNamespaces) {
		t.Errorf("ENOMEM classified as a refusal: %v", err)
	}
	weak := &Sandbox{cfg: DefaultConfig()}
	weak.cfg.Mode = ModeUnsafeRlimitsOnly
	if err := weak.startError(syscall.EPERM); errors.Is(err, ErrNoNamespaces) {
		t.Errorf("weak mode: %v", err)
	}
}

// As an unprivileged user (nobody) the sandbox maps that user to root in
// its namespaces and still holds: the test binary re-runs the hostile
// checks under uid 65534. Only when the tests run as root.
func TestUnprivilegedUser(t *testing.T) {
	if os.Getenv("RAGEN_SANDBOX_UNPRIV") == "1" {
		t.Skip("already the unprivileged child")
	}
	if os.Getuid() != 0 {
		t.Skip("not root: the other tests already run unprivileged")
	}
	testSandbox(t, ModeNamespaces)
	dir, err := os.MkdirTemp("", "ragen-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^Test(RunsCode|Hostile)$/^(fork_bomb|huge_allocation|write_outside_its_folder|read_host_files|open_a_socket|kill_its_parent)$", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"RAGEN_SANDBOX_UNPRIV=1", "PATH=/usr/bin:/bin", "TMPDIR=/tmp", "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "refuses user namespaces") {
		t.Skipf("unprivileged user namespaces refused here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHostile") || !strings.Contains(string(out), "--- PASS: TestRunsCode") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// Functional arguments are prepared before any test runs, as upstream
// prepares them: Args text keeps floats, NaN and key order; an input
// string is eval'd; an unserialisable value stops the job with ArgsError;
// an endless expression uses up the budget.
func TestArgsPrepared(t *testing.T) {
	s := generous(t, ModeNamespaces)
	tests := []Test{
		{Args: `[1.0, NaN, {"b": 1, "a": 2}]`, Functional: true},
		{Input: "1+1\n'x'", Functional: true},
		{Input: "ab\r\n", Functional: false},
	}
	rep, err := s.Run(context.Background(), Job{Program: "import sys\ndef f(*a): return repr(a)\nif __name__ == '__main__': print(repr(sys.stdin.read()))", FuncName: "f", Tests: tests})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{rep.Outcomes[0].Result, rep.Outcomes[1].Result, rep.Outcomes[2].Stdout}
	want := []string{"(1.0, nan, {'b': 1, 'a': 2})", "(2, 'x')", "'ab\\r\\n'\n"}
	for i := range want {
		if got[i] != want[i] || !rep.Outcomes[i].Completed || rep.Outcomes[i].Exception != "" {
			t.Errorf("test %d: %q, want %q (%+v)", i, got[i], want[i], rep.Outcomes[i])
		}
	}
	rep, err = s.Run(context.Background(), Job{Program: "print(1)", FuncName: "f", Tests: append(tests, Test{Input: "{1}", Functional: true})})
	if err != nil || rep.ArgsError != "TypeError('Object of type set is not JSON serializable')" || rep.ArgsTest != 3 || rep.Outcomes[0].Status != "not_run" {
		t.Errorf("set argument: %+v %v", rep, err)
	}
	rep, err = testSandbox(t, ModeNamespaces).Run(context.Background(), Job{Program: "print(1)", FuncName: "f", Tests: []Test{{Input: "sum(iter(int, 1))", Functional: true}}})
	if err != nil || !rep.TimedOut {
		t.Errorf("endless argument: %+v %v", rep, err)
	}
	if left := leftovers(t); len(left) > 0 {
		t.Errorf("sandbox processes left on the host: %v", left)
	}
}
