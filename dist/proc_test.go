package dist

import (
	"context"
	"fmt"
	"os"
	"ragen/internal/testranks"
	"strings"
	"testing"
	"time"
)

// The tests start 2-3 copies of the test binary itself on 127.0.0.1; a copy
// with RAGEN_DIST_TEST_WORKER set runs that worker instead of the tests.
func TestMain(m *testing.M) {
	if name := os.Getenv("RAGEN_DIST_TEST_WORKER"); name != "" {
		w, ok := workers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown worker %q\n", name)
			os.Exit(2)
		}
		if err := w(); err != nil {
			fmt.Fprintf(os.Stderr, "rank %s: %v\n", os.Getenv("RANK"), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var workers = map[string]func() error{}

func freePort(t testing.TB) int { return testranks.FreePort(t) }

type result struct {
	code int
	out  string
}

// spawn runs worker in n processes (ranks 0..n-1) and waits for all of them,
// at most limit; extra env entries go to every rank.
func spawn(t testing.TB, n int, worker string, limit time.Duration, extra ...string) []result {
	t.Helper()
	env := append([]string{"RAGEN_DIST_TEST_WORKER=" + worker}, extra...)
	res := make([]result, n)
	for r, x := range testranks.Spawn(t, n, limit, env...) {
		res[r] = result{code: x.Code, out: x.Out}
	}
	return res
}

func wantAllOK(t *testing.T, res []result) {
	t.Helper()
	for r, x := range res {
		if x.code != 0 {
			t.Errorf("rank %d exited %d:\n%s", r, x.code, x.out)
		}
	}
}

func fromEnvInit() (*Group, error) {
	cfg, ok, err := FromEnv()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no RANK/WORLD_SIZE in the environment")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	return Init(context.Background(), cfg)
}

func TestFirstHost(t *testing.T) {
	for in, want := range map[string]string{
		"n[01-04],m7": "n01", "gpu7": "gpu7", "a,b": "a", "x[3,5]": "x3", "node[10]": "node10",
	} {
		if got := firstHost(in); got != want {
			t.Errorf("firstHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	env := map[string]string{}
	getenv = func(k string) string { return env[k] }
	defer func() { getenv = os.Getenv }()
	if _, ok, err := FromEnv(); ok || err != nil {
		t.Fatalf("empty env: ok=%v err=%v", ok, err)
	}
	env = map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "gpu[07-08]"}
	cfg, ok, err := FromEnv()
	if !ok || err != nil || cfg.Rank != 2 || cfg.WorldSize != 4 || cfg.MasterAddr != "gpu07" {
		t.Fatalf("slurm: %+v ok=%v err=%v", cfg, ok, err)
	}
	env = map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234",
		"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0"}
	cfg, ok, err = FromEnv()
	if !ok || err != nil || cfg.Rank != 1 || cfg.MasterPort != 1234 || !cfg.AgentStore || cfg.Prefix != "ragen/0" {
		t.Fatalf("torchrun: %+v ok=%v err=%v", cfg, ok, err)
	}
	for _, bad := range []map[string]string{
		{"RANK": "2", "WORLD_SIZE": "2"},
		{"RANK": "x", "WORLD_SIZE": "2"},
		{"RANK": "0"},
		{"RANK": "0", "WORLD_SIZE": "1", "RAGEN_DIST_TIMEOUT": "soon"},
		{"RANK": "0", "WORLD_SIZE": "1", "RAGEN_DIST_BACKEND": "mpi"},
	} {
		env = bad
		if _, _, err := FromEnv(); err == nil {
			t.Errorf("FromEnv(%v): no error", bad)
		} else if !strings.Contains(err.Error(), "dist:") {
			t.Errorf("FromEnv(%v): %v", bad, err)
		}
	}
}
