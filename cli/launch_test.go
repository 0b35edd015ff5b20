package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ragen/config"
	"ragen/dist"
	"ragen/torch"
)

// A copy of the test binary started with RAGEN_LAUNCH_TEST_WORKER set is a
// rank of the launch tests: it joins the group from the launcher's
// environment, all-reduces rank+1 and prints the sum; the rank named by
// RAGEN_LAUNCH_TEST_FAIL exits 3 instead.
func init() {
	if os.Getenv("RAGEN_LAUNCH_TEST_WORKER") == "" {
		return
	}
	if err := launchTestWorker(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %s: %v\n", os.Getenv("RANK"), err)
		os.Exit(1)
	}
	os.Exit(0)
}

func launchTestWorker() error {
	cfg, ok, err := dist.FromEnv()
	if err != nil || !ok {
		return fmt.Errorf("environment: ok=%v err=%v", ok, err)
	}
	cfg.Timeout = 30 * time.Second
	g, err := dist.Init(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	if strconv.Itoa(g.Rank()) == os.Getenv("RAGEN_LAUNCH_TEST_FAIL") {
		os.Exit(3)
	}
	x, err := torch.From([]float32{float32(g.Rank() + 1)}, 1)
	if err != nil {
		return err
	}
	if err := g.AllReduce(context.Background(), dist.Sum, x); err != nil {
		return err
	}
	v, err := x.Item()
	if err != nil {
		return err
	}
	if out := os.Getenv("RAGEN_LAUNCH_TEST_OUT"); out != "" {
		f := filepath.Join(out, fmt.Sprintf("rank%d", g.Rank()))
		return os.WriteFile(f, []byte(fmt.Sprintf("rank=%d world=%d local=%d sum=%g", g.Rank(), g.Size(), g.LocalRank(), v)), 0o644)
	}
	return nil
}

func TestParseLaunch(t *testing.T) {
	o, rest, err := parseLaunch([]string{"--nproc_per_node=2", "--master-port", "1234", "train", "--config-name", "demo"})
	if err != nil || o.nproc != 2 || o.port != 1234 || strings.Join(rest, " ") != "train --config-name demo" {
		t.Fatalf("%+v %v %v", o, rest, err)
	}
	for args, want := range map[string]string{
		"train":                    "--nproc-per-node N is required",
		"--nproc-per-node 0 train": "want an integer >= 1",
		"--nproc-per-node 2":       "no command",
		"--nproc-per-node 2 --nnodes 2 --node-rank 2 train": "--node-rank 2 outside 0..1",
		"--nproc-per-node 2 --bogus 1 train":                "unknown flag --bogus",
		"--nproc-per-node 2 --master-port 70000 train":      "outside 1..65535",
	} {
		if _, _, err := parseLaunch(strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseLaunch(%q) = %v, want %q", args, err, want)
		}
	}
}

func TestLaunchOnlyTrain(t *testing.T) {
	err := cmdLaunch(context.Background(), []string{"--nproc-per-node", "2", "eval", "--policy", "oracle"})
	if err == nil || !strings.Contains(err.Error(), "only `train` runs data-parallel") {
		t.Fatalf("err = %v", err)
	}
}

func launchTest(t *testing.T, n int, fail string) (string, error) {
	out := t.TempDir()
	t.Setenv("RAGEN_LAUNCH_TEST_WORKER", "1")
	t.Setenv("RAGEN_LAUNCH_TEST_FAIL", fail)
	t.Setenv("RAGEN_LAUNCH_TEST_OUT", out)
	o, rest, err := parseLaunch([]string{"--nproc-per-node", strconv.Itoa(n), os.Args[0], "-test.run=^$"})
	if err != nil {
		t.Fatal(err)
	}
	o.grace = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = launchRanks(ctx, o, rest)
	if ctx.Err() != nil {
		t.Fatalf("launch still running after 60 s: %v", err)
	}
	return out, err
}

func TestLaunchRanks(t *testing.T) {
	out, err := launchTest(t, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 3; r++ {
		b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("rank%d", r)))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("rank=%d world=3 local=%d sum=6", r, r); string(b) != want {
			t.Errorf("rank %d wrote %q, want %q", r, b, want)
		}
	}
}

func TestLaunchFailedRank(t *testing.T) {
	_, err := launchTest(t, 3, "1")
	if err == nil || !strings.Contains(err.Error(), "rank 1 (local rank 1 of node 0) failed: exit status 3") {
		t.Fatalf("err = %v", err)
	}
}

// The same binary under Debian's torchrun (python3-torch, `make deps-bench`).
func TestTorchrun(t *testing.T) {
	tr, err := exec.LookPath("torchrun")
	if err != nil {
		t.Skip("torchrun not installed (python3-torch, `make deps-bench`): skipping the torchrun launch check")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// --redirects 1 --tee 1: Debian's torchrun 1.13 on Python >= 3.11 fails
	// on the default "0" (Std.from_str returns None for IntFlag 0).
	c := exec.CommandContext(ctx, tr, "--no_python", "--redirects", "1", "--tee", "1", "--nproc_per_node", "2", "--master_port", strconv.Itoa(mustFreePort(t)), os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "RAGEN_LAUNCH_TEST_WORKER=1", "RAGEN_LAUNCH_TEST_OUT="+out)
	b, err := c.CombinedOutput()
	if err != nil && bytes.Contains(b, []byte("use_libuv was requested but PyTorch was build without libuv")) {
		// Debian's torchrun 2.6: its static rendezvous asks for the libuv
		// TCPStore, which that build lacks, whatever USE_LIBUV says; it
		// fails before starting a rank (ragen's ranks fall back by
		// themselves, dist.cc)
		t.Skip("this torchrun cannot start: its PyTorch asks for a libuv store it was built without")
	}
	if err != nil {
		t.Fatalf("torchrun: %v\n%s", err, b)
	}
	for r := 0; r < 2; r++ {
		got, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("rank%d", r)))
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if want := fmt.Sprintf("rank=%d world=2 local=%d sum=3", r, r); string(got) != want {
			t.Errorf("rank %d wrote %q, want %q", r, got, want)
		}
	}
}

func mustFreePort(t *testing.T) int {
	p, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckWorldSize(t *testing.T) {
	tree := func(kv ...string) *config.Tree {
		tr, _, err := loadTree(kv, "base")
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, k := range []string{"RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"} {
		t.Setenv(k, "")
	}
	if err := checkWorldSize(tree()); err != nil {
		t.Fatalf("single process, n_gpus_per_node=1: %v", err)
	}
	err := checkWorldSize(tree("trainer.n_gpus_per_node=2", "system.CUDA_VISIBLE_DEVICES='0,1'"))
	if err == nil || !strings.Contains(err.Error(), "1 x 2 = 2 processes") || !strings.Contains(err.Error(), "single process") {
		t.Errorf("n_gpus_per_node=2 alone: %v", err)
	}
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "3")
	err = checkWorldSize(tree("trainer.n_gpus_per_node=2", "system.CUDA_VISIBLE_DEVICES='0,1'"))
	if err == nil || !strings.Contains(err.Error(), "world size 3") || !strings.Contains(err.Error(), "= 2 processes") {
		t.Errorf("world 3 vs 2: %v", err)
	}
}
