// Package testranks runs a test binary again as the ranks of a
// multi-process test: n processes on 127.0.0.1 with the torchrun
// environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), one
// intra-op thread each, bounded in time. The worker side is the test
// binary's TestMain (or init) reading an environment variable of its own.
package testranks

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Result is one rank's exit code and combined output.
type Result struct {
	Code int
	Out  string
}

// FreePort is a TCP port free on 127.0.0.1 at the time of the call.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Spawn runs the test binary (no tests, -test.run=^$) as ranks 0..n-1 with
// env added to each, waits for all of them, and fails the test if any is
// still running after limit (they are killed).
func Spawn(t testing.TB, n int, limit time.Duration, env ...string) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	port := FreePort(t)
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for r := range n {
		c := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(),
			"RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), "OMP_NUM_THREADS=1")
		c.Env = append(c.Env, env...)
		outs[r] = new(bytes.Buffer)
		c.Stdout, c.Stderr = outs[r], outs[r]
		c.WaitDelay = time.Second
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	res := make([]Result, n)
	for r, c := range cmds {
		err := c.Wait()
		res[r] = Result{Code: c.ProcessState.ExitCode(), Out: outs[r].String()}
		if ctx.Err() != nil {
			t.Fatalf("rank %d of %d still running after %v (killed): %v\n%s", r, n, limit, err, res[r].Out)
		}
	}
	return res
}

// SpawnOK is Spawn, failing the test unless every rank exits 0.
func SpawnOK(t testing.TB, n int, limit time.Duration, env ...string) {
	t.Helper()
	for r, x := range Spawn(t, n, limit, env...) {
		if x.Code != 0 {
			t.Fatalf("rank %d of %d: exit status %d\n%s", r, n, x.Code, x.Out)
		}
	}
}
