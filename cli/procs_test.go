package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A copy of the test binary started by a launcher (RANK set) with
// RAGEN_LAUNCH_TEST_SLEEP=DIR is a rank that writes its pid to
// DIR/rank<R>.pid and sleeps: the launcher's signal tests.
func init() {
	dir := os.Getenv("RAGEN_LAUNCH_TEST_SLEEP")
	if dir == "" || os.Getenv("RANK") == "" {
		return
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	tmp := filepath.Join(dir, ".rank"+os.Getenv("RANK"))
	if os.WriteFile(tmp, pid, 0o644) != nil || os.Rename(tmp, filepath.Join(dir, "rank"+os.Getenv("RANK")+".pid")) != nil {
		os.Exit(2)
	}
	time.Sleep(2 * time.Minute)
	os.Exit(0)
}

// startLauncher runs `ragen launch --nproc-per-node 2 version` from the
// test binary (RAGEN_TEST_AS_CLI) with sleeping ranks and returns it and
// its ranks' pids once both are up.
// Its stderr is a file, read by the returned function: a pipe would make
// Wait wait for the ranks, which inherit it.
func startLauncher(t *testing.T) (*exec.Cmd, func() string, []int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "launch", "--nproc-per-node", "2", "version")
	cmd.Env = append(os.Environ(), "RAGEN_TEST_AS_CLI=1", "RAGEN_LAUNCH_TEST_SLEEP="+dir)
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stderr = f
	stderr := func() string { b, _ := os.ReadFile(f.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pids []int
	for deadline := time.Now().Add(60 * time.Second); len(pids) < 2; {
		pids = pids[:0]
		for r := range 2 {
			if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank%d.pid", r))); err == nil {
				if pid, err := strconv.Atoi(string(b)); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ranks did not start within 60 s: %s", stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	return cmd, stderr, pids
}

// alive reports whether pid runs (a zombie waiting for its reaper does
// not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
		return false
	}
	return true
}

// Ranks die with a launcher killed by SIGKILL (their parent-death signal);
// without it they kept training for minutes.
func TestLaunchRanksDieWithKilledLauncher(t *testing.T) {
	cmd, _, pids := startLauncher(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("rank pid %d still runs 20 s after its launcher was killed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// SIGTERM to the launcher exits 143 and SIGINT 130 (128 + the signal),
// and the message names the signal; the ranks are stopped.
func TestLaunchSignalExitCodes(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGTERM, 143, "SIGTERM"}, {syscall.SIGINT, 130, "SIGINT"}} {
		t.Run(c.name, func(t *testing.T) {
			cmd, stderr, pids := startLauncher(t)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Errorf("exit: %v, want status %d", err, c.code)
			}
			msg := stderr()
			if !strings.Contains(msg, "stopped by "+c.name) || strings.Contains(msg, "context canceled") {
				t.Errorf("stderr %q: want it to name %s and not say \"context canceled\"", msg, c.name)
			}
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("rank pid %d still runs after the launcher exited", pid)
				}
			}
		})
	}
}

// A command that returns the bare context error still names the signal.
func TestExitCodeNamesSignal(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalError{sig: syscall.SIGTERM})
	code, msg := exitCode(ctx, fmt.Errorf("eval: %w", ctx.Err()))
	if code != 143 || msg != "ragen: eval: context canceled (stopped by SIGTERM)" {
		t.Errorf("exitCode = %d, %q", code, msg)
	}
	if code, _ := exitCode(context.Background(), context.Canceled); code != 130 {
		t.Errorf("a cancellation without a signal: %d, want 130", code)
	}
	if code, _ := exitCode(ctx, errors.New("boom")); code != 1 {
		t.Errorf("a plain error: %d, want 1", code)
	}
}

// SIGTERM stops serve-envs with exit status 0, as its help says, every
// time (closing the listener twice made it exit 1 now and then).
func TestServeEnvsSIGTERMExitsZero(t *testing.T) {
	for i := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(os.Args[0], "serve-envs", "--addr", addr)
		cmd.Env = append(os.Environ(), "RAGEN_TEST_AS_CLI=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		up := false
		for deadline := time.Now().Add(60 * time.Second); !up && time.Now().Before(deadline); {
			if resp, err := http.Get("http://" + addr + "/v1/health"); err == nil {
				resp.Body.Close()
				up = true
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if !up {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("serve-envs did not answer within 60 s: %s", stderr.String())
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run %d: serve-envs after SIGTERM: %v: %s", i, err, stderr.String())
		}
	}
}

// A run folder has one live writer: a second run into it is refused with
// an error naming the holder, before it loads anything; another rank's
// lock is its own, and a released lock can be taken again.
func TestRunFolderLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	held, err := lockRunDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockRunDir(dir, 0)
	if err == nil || !strings.Contains(err.Error(), "in use by a live run") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second lock: %v", err)
	}
	other, err := lockRunDir(dir, 1)
	if err != nil {
		t.Fatalf("rank 1: %v", err)
	}
	other.release()
	err = run(context.Background(), append(append([]string{"train"}, tinySweepArgs()...), "trainer.default_local_dir="+dir))
	if err == nil || !strings.Contains(err.Error(), "in use by a live run") {
		t.Fatalf("a second run into a held folder: %v", err)
	}
	held.release()
	again, err := lockRunDir(dir, 0)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.release()
}
