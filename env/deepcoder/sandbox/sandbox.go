package sandbox

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed runner.py
var runnerSource string

// Modes of isolation.
const (
	// ModeNamespaces is the default: full isolation as described above.
	ModeNamespaces = "namespaces"
	// ModeUnsafeRlimitsOnly runs code with rlimits, a fresh working
	// directory and a process group only. The program can read and write
	// whatever the host user can and reach the network. Only for kernels
	// that refuse user namespaces, by explicit choice.
	ModeUnsafeRlimitsOnly = "unsafe_rlimits_only"
)

// ErrNoNamespaces is returned (wrapped) when the kernel refuses to create
// the namespaces the sandbox needs.
var ErrNoNamespaces = errors.New("sandbox: the kernel refused to create user/PID/network/mount namespaces, so untrusted code cannot be isolated; " +
	"enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0, or the AppArmor userns restriction off), " +
	"or opt into the weaker mode by setting sandbox_mode: " + ModeUnsafeRlimitsOnly)

// Config holds the sandbox limits.
type Config struct {
	Python  string        // interpreter; Debian's /usr/bin/python3
	Mode    string        // ModeNamespaces or ModeUnsafeRlimitsOnly
	Timeout time.Duration // wall-clock budget of all tests of one Run (upstream: 3 s)
	// MemoryBytes is RLIMIT_AS of each test process and, in namespace
	// mode, the budget of resident memory (anonymous and shared) of all of
	// a test's processes together (checked every 10 ms): a fork bomb of
	// allocators cannot multiply it.
	MemoryBytes int64
	FileBytes   int64 // RLIMIT_FSIZE
	TmpfsBytes  int64 // size of each of the root, /work and /tmp tmpfs mounts
	MaxProcs    int   // RLIMIT_NPROC
	OutputBytes int   // cap on what one test may print (stdout+stderr+result)
	// SetupAllowance is extra wall time for starting the interpreter and
	// building the root, on top of Timeout, before Go kills the sandbox.
	SetupAllowance time.Duration
}

// DefaultConfig returns the defaults: namespaces, 3 s, 1 GiB address
// space, 16 MiB files, 32 MiB tmpfs, 64 processes, 1 MiB output.
func DefaultConfig() Config {
	return Config{
		Python: "/usr/bin/python3", Mode: ModeNamespaces, Timeout: 3 * time.Second,
		MemoryBytes: 1 << 30, FileBytes: 16 << 20, TmpfsBytes: 32 << 20, MaxProcs: 64,
		OutputBytes: 1 << 20, SetupAllowance: 5 * time.Second,
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Mode != ModeNamespaces && c.Mode != ModeUnsafeRlimitsOnly {
		errs = append(errs, fmt.Errorf("sandbox: mode %q: want %q or %q", c.Mode, ModeNamespaces, ModeUnsafeRlimitsOnly))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("sandbox: timeout %v must be positive", c.Timeout))
	}
	if c.MemoryBytes < 64<<20 {
		errs = append(errs, fmt.Errorf("sandbox: memory limit %d bytes is below 64 MiB (the interpreter alone needs ~20 MiB)", c.MemoryBytes))
	}
	if c.FileBytes <= 0 || c.TmpfsBytes < 1<<20 || c.MaxProcs < 1 || c.OutputBytes < 1024 {
		errs = append(errs, fmt.Errorf("sandbox: file limit, tmpfs size (>= 1 MiB), process limit and output cap (>= 1 KiB) must be positive"))
	}
	if c.SetupAllowance < 0 {
		errs = append(errs, errors.New("sandbox: setup allowance is negative"))
	}
	if c.Python == "" {
		errs = append(errs, errors.New("sandbox: python interpreter path is empty"))
	}
	return errors.Join(errs...)
}

// CheckPython reports a clear error when the interpreter is missing.
func (c Config) CheckPython() error {
	st, err := os.Stat(c.Python)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("sandbox: python interpreter %s not found or not executable (install Debian's python3: apt-get install python3-minimal, or set python_path): %v", c.Python, err)
	}
	return nil
}

// Test is one test case. Input is a string (stdin text, or for functional
// tests one Python expression per line, evaluated in the sandbox) or, for
// functional tests, a JSON list of arguments.
type Test struct {
	Input      any
	Functional bool // call FuncName instead of feeding stdin
	// Args, when not empty, is a functional test's argument list as JSON
	// text in Python's dialect (NaN and ±Infinity allowed; 1.0 stays a
	// float, object keys keep their order); it replaces Input.
	Args string
}

// Job is a program and the inputs to run it on.
type Job struct {
	Program  string
	FuncName string // for functional tests: Solution().FuncName or top-level FuncName
	Tests    []Test
}

// Outcome of one test as the runner saw it.
type Outcome struct {
	Status string // "done", "timeout", "output_limit", "memory_limit", "not_run"
	Stdout string
	Stderr string // last 4000 bytes
	Result string // functional tests: str(return value)
	// Exception is how a test that did not complete ended:
	// "<text>\x01<kind>", kind "exc" (text: the repr of an Exception),
	// "crash" (a traceback), "notfound" or "exit" (text: {"status": the
	// exit status, "stderr": what Python prints}); empty when the process
	// ended without saying (os._exit, a fatal signal) or completed.
	Exception string
	Completed bool // the program (or function call) ran to its end
	Signal    int  // the test process died from this signal
	ExitCode  int
}

// Report is what one Run returns.
type Report struct {
	Outcomes []Outcome // one per test, in order (not_run after a timeout)
	TimedOut bool      // the wall-clock budget ran out
	Crashed  bool      // the runner itself died or was killed
	Detail   string    // why, when Crashed
	// ArgsError is set when a functional test's arguments cannot be
	// prepared (upstream's json.dumps fails on them, e.g. a set): no test
	// ran. ArgsTest is that test's index.
	ArgsError string
	ArgsTest  int
	Elapsed   time.Duration
}

// Sandbox runs jobs. It is safe for concurrent use.
type Sandbox struct {
	cfg Config

	probeOnce sync.Once
	probeErr  error

	// keepHostFDs skips markHostFDsCloseOnExec, so tests can check that
	// the runner's own closing holds alone.
	keepHostFDs bool
}

// New checks the config and the interpreter.
func New(cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.CheckPython(); err != nil {
		return nil, err
	}
	return &Sandbox{cfg: cfg}, nil
}

// Config returns the sandbox's configuration.
func (s *Sandbox) Config() Config { return s.cfg }

// Probe runs an empty job once to check that the isolation works here
// (the result is cached). It returns ErrNoNamespaces when the kernel
// refuses the namespaces.
func (s *Sandbox) Probe(ctx context.Context) error {
	s.probeOnce.Do(func() {
		rep, err := s.run(ctx, Job{Program: "print(1)", Tests: []Test{{Input: ""}}})
		if err == nil && (len(rep.Outcomes) != 1 || rep.Outcomes[0].Stdout != "1\n") {
			err = fmt.Errorf("sandbox: probe printed %+v (%s)", rep.Outcomes, rep.Detail)
		}
		s.probeErr = err
	})
	return s.probeErr
}

// Run executes job. The error is for the sandbox itself failing (no
// namespaces, no interpreter, a setup failure); misbehaving programs are
// reported in the Report.
func (s *Sandbox) Run(ctx context.Context, job Job) (Report, error) {
	if err := s.Probe(ctx); err != nil {
		return Report{}, err
	}
	return s.run(ctx, job)
}

type wireTest struct {
	Input      any    `json:"input"`
	Functional bool   `json:"functional"`
	Args       string `json:"args,omitempty"`
}

type wireOutcome struct {
	Test       *int   `json:"test"`
	Status     string `json:"status"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Result     string `json:"result"`
	Exception  string `json:"exception"`
	Signal     int    `json:"signal"`
	ExitCode   int    `json:"exit_code"`
	Finished   bool   `json:"finished"`
	Completed  bool   `json:"completed"`
	SetupError string `json:"setup_error"`
	ArgsError  string `json:"args_error"`
}

func (s *Sandbox) run(ctx context.Context, job Job) (Report, error) {
	start := time.Now()
	if s.cfg.Mode == ModeNamespaces && runtime.GOOS != "linux" {
		return Report{}, fmt.Errorf("%w (namespaces need Linux, this is %s)", ErrNoNamespaces, runtime.GOOS)
	}
	tests := make([]wireTest, len(job.Tests))
	for i, t := range job.Tests {
		if _, ok := t.Input.(string); !ok && !t.Functional {
			return Report{}, fmt.Errorf("sandbox: test %d: a stdin test needs a string input, got %T", i, t.Input)
		}
		tests[i] = wireTest{Input: t.Input, Functional: t.Functional}
		if t.Functional && t.Args != "" {
			tests[i] = wireTest{Input: nil, Functional: true, Args: t.Args}
		}
		if tests[i].Input == nil {
			tests[i].Input = ""
		}
	}
	if job.FuncName == "" {
		for i, t := range job.Tests {
			if t.Functional {
				return Report{}, fmt.Errorf("sandbox: test %d is functional but the job has no function name", i)
			}
		}
	}
	payload, err := json.Marshal(map[string]any{"program": job.Program, "func_name": job.FuncName, "tests": tests})
	if err != nil {
		return Report{}, fmt.Errorf("sandbox: %w", err)
	}
	lim, _ := json.Marshal(map[string]any{
		"timeout_s": s.cfg.Timeout.Seconds(), "memory_bytes": s.cfg.MemoryBytes, "file_bytes": s.cfg.FileBytes,
		"tmpfs_bytes": s.cfg.TmpfsBytes, "max_procs": s.cfg.MaxProcs, "output_bytes": s.cfg.OutputBytes,
	})
	dir, err := os.MkdirTemp("", "ragen-sandbox-")
	if err != nil {
		return Report{}, fmt.Errorf("sandbox: work dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return Report{}, fmt.Errorf("sandbox: work dir: %w", err)
	}

	mode := "ns"
	if s.cfg.Mode == ModeUnsafeRlimitsOnly {
		mode = "weak"
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout+s.cfg.SetupAllowance)
	defer cancel()
	cmd := exec.CommandContext(rctx, s.cfg.Python, "-I", "-S", "-B", "-c", runnerSource, mode, string(lim))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8", "HOME=/work"}
	cmd.SysProcAttr = sysProcAttr(s.cfg.Mode)
	cmd.Cancel = func() error { return killTree(cmd.Process.Pid) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = bytes.NewReader(payload)
	var stderr capped
	stderr.max = 16 << 10
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	rr, rw, err := os.Pipe()
	if err != nil {
		return Report{}, fmt.Errorf("sandbox: %w", err)
	}
	cmd.ExtraFiles = []*os.File{rw}
	if !s.keepHostFDs {
		if err := markHostFDsCloseOnExec(); err != nil {
			rr.Close()
			rw.Close()
			return Report{}, err
		}
	}
	if err := cmd.Start(); err != nil {
		rr.Close()
		rw.Close()
		return Report{}, s.startError(err)
	}
	rw.Close()
	// Read the report (bounded: a few lines per test, each capped by the
	// runner); stop reading at a limit so a forged flood cannot exhaust us.
	var lines []wireOutcome
	var readErr error
	func() {
		defer rr.Close()
		br := bufio.NewReaderSize(io.LimitReader(rr, int64(len(job.Tests)+4)*int64(3*s.cfg.OutputBytes+16<<10)), 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var w wireOutcome
				if jerr := json.Unmarshal(line, &w); jerr != nil {
					readErr = fmt.Errorf("bad report line: %v", jerr)
					return
				}
				lines = append(lines, w)
			}
			if err != nil {
				return
			}
		}
	}()
	waitErr := cmd.Wait()
	rep := Report{Elapsed: time.Since(start), Outcomes: make([]Outcome, len(job.Tests))}
	for i := range rep.Outcomes {
		rep.Outcomes[i].Status = "not_run"
	}
	finished := false
	for _, w := range lines {
		switch {
		case w.SetupError != "":
			if strings.Contains(w.SetupError, "Operation not permitted") || strings.Contains(w.SetupError, "Permission denied") {
				// A kernel or security module (AppArmor's userns
				// restriction, seccomp) let the namespaces be made but
				// not used: the same refusal.
				return rep, fmt.Errorf("%w (setting up the isolated root: %s)", ErrNoNamespaces, w.SetupError)
			}
			return rep, fmt.Errorf("sandbox: setting up the isolated root failed: %s", w.SetupError)
		case w.ArgsError != "":
			rep.ArgsError = w.ArgsError
			if w.Test != nil {
				rep.ArgsTest = *w.Test
			}
		case w.Finished:
			finished = true
		case w.Test != nil && *w.Test >= 0 && *w.Test < len(rep.Outcomes):
			rep.Outcomes[*w.Test] = Outcome{Status: w.Status, Stdout: w.Stdout, Stderr: w.Stderr, Result: w.Result,
				Exception: w.Exception, Completed: w.Completed, Signal: w.Signal, ExitCode: w.ExitCode}
			if w.Status == "timeout" {
				rep.TimedOut = true
			}
		}
	}
	if ctx.Err() != nil {
		return rep, fmt.Errorf("sandbox: %w", ctx.Err())
	}
	if !finished {
		rep.Crashed = true
		switch {
		case rctx.Err() != nil:
			rep.TimedOut = true
			rep.Detail = fmt.Sprintf("killed after %v", s.cfg.Timeout+s.cfg.SetupAllowance)
		case readErr != nil:
			rep.Detail = readErr.Error()
		case waitErr != nil:
			rep.Detail = fmt.Sprintf("runner died: %v: %s", waitErr, strings.TrimSpace(stderr.String()))
		default:
			rep.Detail = "runner ended without a report: " + strings.TrimSpace(stderr.String())
		}
	}
	return rep, nil
}

// startError classifies a failed start: the kernel refusing the
// namespaces (EPERM, EINVAL, ENOSPC, EACCES from clone or the id maps) is
// ErrNoNamespaces; a missing interpreter says how to install it.
func (s *Sandbox) startError(err error) error {
	if s.cfg.Mode == ModeNamespaces && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES)) {
		return fmt.Errorf("%w (clone: %v)", ErrNoNamespaces, err)
	}
	if errors.Is(err, os.ErrNotExist) {
		if perr := s.cfg.CheckPython(); perr != nil {
			return perr
		}
	}
	return fmt.Errorf("sandbox: start %s: %w", s.cfg.Python, err)
}

// killTree kills the sandbox's PID 1 (which takes its PID namespace down)
// and its process group.
func killTree(pid int) error {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return syscall.Kill(pid, syscall.SIGKILL)
}

// capped is an io.Writer keeping the first max bytes and discarding the
// rest (the writer never blocks the child).
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
