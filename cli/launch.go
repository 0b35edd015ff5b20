package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ragen/config"
	"ragen/dist"
	"ragen/starpo"
)

const launchUsage = `usage: ragen launch --nproc-per-node N [--nnodes M --node-rank R --master-addr A --master-port P] COMMAND [ARGS...]

Starts N local ranks of "ragen COMMAND ARGS..." (global ranks R*N .. R*N+N-1 of M*N)
with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) and supervises them: when one rank fails, the others are
stopped and the error names the failed rank and why. Rank 0 serves the c10d store at
MASTER_ADDR:MASTER_PORT (default 127.0.0.1 and, on one node, a free port).
`

// launchOpts are `ragen launch`'s flags.
type launchOpts struct {
	nproc, nnodes, nodeRank int
	addr                    string
	port                    int
	grace                   time.Duration // SIGTERM to SIGKILL when stopping ranks
}

func parseLaunch(args []string) (launchOpts, []string, error) {
	o := launchOpts{nnodes: 1, addr: "127.0.0.1", grace: 10 * time.Second}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "--") {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		if !hasVal {
			if i+1 >= len(args) {
				return o, nil, fmt.Errorf("launch: --%s needs a value", name)
			}
			i++
			val = args[i]
		}
		num := func(dst *int, lo int) error {
			n, err := strconv.Atoi(val)
			if err != nil || n < lo {
				return fmt.Errorf("launch: --%s %q: want an integer >= %d", name, val, lo)
			}
			*dst = n
			return nil
		}
		var err error
		switch name {
		case "nproc-per-node":
			err = num(&o.nproc, 1)
		case "nnodes":
			err = num(&o.nnodes, 1)
		case "node-rank":
			err = num(&o.nodeRank, 0)
		case "master-addr":
			o.addr = val
		case "master-port":
			if err = num(&o.port, 1); err == nil && o.port > 65535 {
				err = fmt.Errorf("launch: --master-port %d outside 1..65535", o.port)
			}
		default:
			return o, nil, fmt.Errorf("launch: unknown flag --%s (valid: --nproc-per-node, --nnodes, --node-rank, --master-addr, --master-port)", name)
		}
		if err != nil {
			return o, nil, err
		}
	}
	rest := args[i:]
	switch {
	case o.nproc == 0:
		return o, nil, errors.New("launch: --nproc-per-node N is required\n" + launchUsage)
	case o.nodeRank >= o.nnodes:
		return o, nil, fmt.Errorf("launch: --node-rank %d outside 0..%d (--nnodes %d)", o.nodeRank, o.nnodes-1, o.nnodes)
	case len(rest) == 0:
		return o, nil, errors.New("launch: no command to run\n" + launchUsage)
	case rest[0] == "launch":
		return o, nil, errors.New("launch: cannot launch `launch`")
	}
	if o.port == 0 {
		if o.nnodes > 1 {
			o.port = dist.DefaultPort
		} else {
			p, err := freeLoopbackPort()
			if err != nil {
				return o, nil, err
			}
			o.port = p
		}
	}
	return o, rest, nil
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("launch: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func cmdLaunch(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Print(launchUsage)
		return nil
	}
	o, rest, err := parseLaunch(args)
	if err != nil {
		return err
	}
	switch rest[0] {
	case "train", "version":
	default:
		// eval, sft, demo, ... are single-process: N copies would write the same outputs
		return fmt.Errorf("launch: %q runs in one process; only `train` runs data-parallel across ranks", rest[0])
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	return launchRanks(ctx, o, append([]string{exe}, rest...))
}

// rankExit is how one local rank ended.
type rankExit struct {
	rank, local int
	err         error // nil: exit status 0
}

// launchRanks runs argv as o.nproc local ranks and waits for all of them.
// The first rank to fail stops the rest (SIGTERM, then SIGKILL after
// o.grace); the error names it and why. Cancelling ctx stops every rank,
// and the error wraps ctx's cause. A launcher that dies (even by SIGKILL)
// takes its ranks with it: they get SIGKILL as their parent-death signal.
func launchRanks(ctx context.Context, o launchOpts, argv []string) error {
	// A rank's parent-death signal fires when the thread that started it
	// ends: keep this goroutine on one thread until the ranks are done.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	world := o.nnodes * o.nproc
	threads := max(1, runtime.NumCPU()/o.nproc)
	cmds := make([]*exec.Cmd, o.nproc)
	done := make(chan rankExit, o.nproc)
	for l := 0; l < o.nproc; l++ {
		rank := o.nodeRank*o.nproc + l
		c := exec.Command(argv[0], argv[1:]...)
		c.Stdin = nil
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = rankProcAttr() // ranks die with a killed launcher
		c.Env = append(os.Environ(),
			"RANK="+strconv.Itoa(rank), "WORLD_SIZE="+strconv.Itoa(world),
			"LOCAL_RANK="+strconv.Itoa(l), "LOCAL_WORLD_SIZE="+strconv.Itoa(o.nproc),
			"GROUP_RANK="+strconv.Itoa(o.nodeRank), "NODE_RANK="+strconv.Itoa(o.nodeRank),
			"MASTER_ADDR="+o.addr, "MASTER_PORT="+strconv.Itoa(o.port))
		if os.Getenv("OMP_NUM_THREADS") == "" {
			c.Env = append(c.Env, "OMP_NUM_THREADS="+strconv.Itoa(threads))
		}
		if err := c.Start(); err != nil {
			for _, p := range cmds[:l] {
				_ = p.Process.Kill()
				_ = p.Wait()
			}
			return fmt.Errorf("launch: starting rank %d: %w", rank, err)
		}
		cmds[l] = c
		go func(l, rank int) { done <- rankExit{rank: rank, local: l, err: c.Wait()} }(l, rank)
	}
	var failed *rankExit
	var cancelled error
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		go func() {
			time.Sleep(o.grace)
			for _, c := range cmds {
				_ = c.Process.Kill() // no-op error for processes already reaped
			}
		}()
	}
	for left := o.nproc; left > 0; {
		select {
		case e := <-done:
			left--
			if e.err != nil && failed == nil && cancelled == nil {
				e := e
				failed = &e
				stop()
			}
		case <-ctx.Done():
			if cancelled == nil {
				// the cause names the signal (Main: 128+signal)
				cancelled = fmt.Errorf("launch: %w; the %d local rank(s) were stopped", context.Cause(ctx), o.nproc)
				stop()
			}
		}
	}
	if failed != nil {
		why := failed.err.Error()
		var ee *exec.ExitError
		if errors.As(failed.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				why = "killed by signal " + ws.Signal().String()
			} else {
				why = fmt.Sprintf("exit status %d", ee.ExitCode())
			}
		}
		return fmt.Errorf("launch: rank %d (local rank %d of node %d) failed: %s; the other %d local rank(s) were stopped",
			failed.rank, failed.local, o.nodeRank, why, o.nproc-1)
	}
	return cancelled
}

// worldFromEnv reads the launcher's environment; a plain process is a world of 1.
func worldFromEnv() (dist.Config, bool, error) {
	cfg, ok, err := dist.FromEnv()
	if err != nil {
		return cfg, ok, err
	}
	if !ok {
		cfg.WorldSize = 1
	}
	return cfg, ok, nil
}

// checkWorldSize stops a run whose trainer.nnodes x trainer.n_gpus_per_node
// differs from the number of processes it was started with.
func checkWorldSize(t *config.Tree) error {
	cfg, launched, err := worldFromEnv()
	if err != nil {
		return err
	}
	g, err := t.Int("trainer.n_gpus_per_node")
	if err != nil {
		return err
	}
	n := 1
	if t.Has("trainer.nnodes") {
		if n, err = t.Int("trainer.nnodes"); err != nil {
			return err
		}
	}
	if g*n == cfg.WorldSize {
		return nil
	}
	how := "as a single process (no RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS set)"
	if launched {
		how = fmt.Sprintf("by its launcher with world size %d", cfg.WorldSize)
	}
	return fmt.Errorf("trainer.nnodes x trainer.n_gpus_per_node = %d x %d = %d processes, but this run was started %s: "+
		"start it with `ragen launch --nproc-per-node %d ...` (or torchrun/srun with %d processes), or set trainer.n_gpus_per_node=%d trainer.nnodes=1",
		n, g, g*n, how, g, g*n, cfg.WorldSize)
}

// worldRank is this process's rank (0 when not launched).
func worldRank() int {
	cfg, launched, err := worldFromEnv()
	if err != nil || !launched {
		return 0
	}
	return cfg.Rank
}

// joinWorld joins the launcher's process group and makes tr one rank of a
// data-parallel run; nil when this is a single process.
func joinWorld(ctx context.Context, tr *starpo.Trainer) (*dist.Group, error) {
	cfg, launched, err := worldFromEnv()
	if err != nil || !launched || cfg.WorldSize == 1 {
		return nil, err
	}
	g, err := dist.Init(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := tr.EnableDataParallel(g); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}
