package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// Regression (issue 14): `ragen train --help` was an error, errors printed
// "ragen: ragen:", and `ragen demo --quick` was in the usage but rejected.
func TestHelpPrefixAndQuickDemo(t *testing.T) {
	ctx := context.Background()
	for _, cmd := range []string{"train", "eval", "sft", "demo", "view", "serve-envs", "dash"} {
		require.NoError(t, run(ctx, []string{cmd, "--help"}), cmd)
		require.NoError(t, run(ctx, []string{cmd, "-h"}), cmd)
	}
	assert.False(t, wantsHelp("view", []string{"help"}), "view's argument is a file name")
	assert.False(t, wantsHelp("launch", []string{"--nproc-per-node", "2", "ragen", "train", "--help"}), "launch passes the child's --help on")
	assert.Equal(t, "ragen: policy: boom", errorLine(errors.New("ragen: policy: boom")))
	assert.Equal(t, "ragen: config: bad", errorLine(errors.New("config: bad")))

	args, err := demoArgs([]string{"--quick", "--out", "d", "sft.steps=5"})
	require.NoError(t, err)
	assert.Equal(t, []string{"sft.steps=30", "trainer.total_training_steps=3", "trainer.test_freq=3",
		"es_manager.val.env_groups=32", "es_manager.val.env_configs.n_groups=[32]", "sft.steps=5", "trainer.default_local_dir=d"}, args)
	tr, _, err := loadTree(append([]string{"--config-name", "demo"}, args...), "demo")
	require.NoError(t, err, "the --quick overrides are a valid demo config")
	n, _ := tr.Int("sft.steps")
	assert.Equal(t, 5, n, "the user's override wins")
}

func TestServeEnvsFlags(t *testing.T) {
	addr, o, err := serveOptions([]string{"--addr", "0.0.0.0:9", "--allow-dir", "/a", "--allow-dir=/b", "--token", "t",
		"--max-memory", "2GiB", "--max-env-memory", "64M", "--max-file-bytes", "1KiB", "--allow-urls", "--max-conns", "7", "--read-timeout", "3s"})
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:9", addr)
	assert.Equal(t, []string{"/a", "/b"}, o.AllowedDirs)
	assert.Equal(t, "t", o.Token)
	assert.Equal(t, int64(2<<30), o.MaxMemoryBytes)
	assert.Equal(t, int64(64e6), o.MaxEnvBytes)
	assert.Equal(t, int64(1024), o.MaxFileBytes)
	assert.True(t, o.AllowURLs)
	assert.Equal(t, 7, o.MaxConns)
	for _, bad := range [][]string{{"--max-conns", "0"}, {"--max-memory", "lots"}, {"--read-timeout", "-1s"}, {"--addr", "nope"}, {"stray"}, {"--frobnicate"}} {
		_, _, err := serveOptions(bad)
		assert.Error(t, err, "%v", bad)
	}
	t.Setenv("RAGEN_ENV_TOKEN", "from-env")
	_, o, err = serveOptions(nil)
	require.NoError(t, err)
	assert.Equal(t, "from-env", o.Token)
	assert.Contains(t, exposureWarning("0.0.0.0:8111", ""), "no token is set")
	assert.Contains(t, exposureWarning("192.168.1.5:8111", ""), "not a loopback address")
	assert.Empty(t, exposureWarning("127.0.0.1:8111", ""))
	assert.Empty(t, exposureWarning("[::1]:8111", ""))
	assert.Empty(t, exposureWarning("localhost:8111", ""))
	assert.Empty(t, exposureWarning("0.0.0.0:8111", "t"))
}

// Regression (issue 14): one truncated reply, one request that exhausted
// its retries or one that timed out aborted the whole eval and wrote
// nothing. Now each fails its episode, recorded with the reason, and the
// run goes on within the failure budget; past it the run stops but keeps
// what it wrote.
func TestEvalUnderAPIFaults(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client hanging up
		k := n.Add(1)
		switch k {
		case 3: // exhausts its (zero) retries
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		case 5: // never answers: the request timeout ends it
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		reason := "stop"
		if k == 7 {
			reason = "length"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"finish_reason":%q,"message":{"role":"assistant","content":"<think>x</think><answer>Right</answer>"}}]}`, reason)
	}))
	defer srv.Close()
	dir := t.TempDir()
	common := []string{"eval", "--policy", "api", "--base-url", srv.URL + "/v1", "--api-model", "stub",
		"--max-retries", "0", "--request-timeout", "2s",
		"es_manager.val.env_groups=10", "es_manager.val.group_size=1", "es_manager.val.env_configs.tags=[SimpleSokoban]",
		"es_manager.val.env_configs.n_groups=[10]", "agent_proxy.max_turn=1", "+model_config.max_concurrency=1"}
	out := filepath.Join(dir, "ok.jsonl")
	require.NoError(t, run(context.Background(), append(append([]string{}, common...), "--out", out, "--max-failures", "3")))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 10)
	var failures []string
	for _, l := range lines {
		if i := strings.Index(l, `"failure": `); i >= 0 {
			failures = append(failures, l[i:])
		}
	}
	require.Len(t, failures, 3, "one per fault")
	joined := strings.Join(failures, "\n")
	assert.Contains(t, joined, "HTTP 503")
	assert.Contains(t, joined, "deadline exceeded")
	assert.Contains(t, joined, `finish reason \"length\"`)
	_, err = os.Stat(out + ".partial")
	assert.True(t, os.IsNotExist(err), "the temporary file was renamed into place")

	// The same faults against a budget of 1: the run stops with an error
	// naming the budget, and the file holds the episodes written.
	n.Store(0)
	out = filepath.Join(dir, "budget.jsonl")
	err = run(context.Background(), append(append([]string{}, common...), "--out", out, "--max-failures", "1", "--chunk-groups", "4"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failure budget exhausted")
	assert.Contains(t, err.Error(), "written so far are in "+out)
	raw, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, 8, strings.Count(string(raw), "\n"), "two chunks of 4 before the second failure")

	// The truncation policy and timeouts are settable: keep accepts the
	// truncated reply.
	n.Store(0)
	out = filepath.Join(dir, "keep.jsonl")
	require.NoError(t, run(context.Background(), append(append([]string{}, common...), "--out", out, "--max-failures", "3", "--truncation", "keep")))
	raw, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(raw), `"failure": `))
	require.ErrorContains(t, run(context.Background(), append(append([]string{}, common...), "--truncation", "maybe")), `--truncation "maybe"`)
}

// Regression (issue 14): SIGINT discarded every finished episode. An
// interrupted eval keeps the chunks it finished, in the output file.
func TestEvalInterruptKeepsWork(t *testing.T) {
	tr, _, err := loadTree([]string{"es_manager.val.env_groups=6", "es_manager.val.group_size=1",
		"es_manager.val.env_configs.tags=[SimpleSokoban]", "es_manager.val.env_configs.n_groups=[6]"}, "eval")
	require.NoError(t, err)
	cfg, err := rolloutConfig(tr)
	require.NoError(t, err)
	opt, err := evalOptions(tr, map[string]string{"chunk-groups": "2"}, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.Progress = func(done, total, failed int) { cancel() } // "SIGINT" after the first chunk
	newPolicy := func(lookup func(int) env.BaseEnv) (ragen.Policy, error) {
		return ragen.NewDemonstrator(ragen.DemonstratorConfig{MaxActions: cfg.AgentProxy.MaxActionsPerTurn, Sep: cfg.AgentProxy.ActionSep, Seed: 1}, lookup)
	}
	out := filepath.Join(t.TempDir(), "cut.jsonl")
	err = runEval(ctx, cfg, tokenizer.NewByte(), newPolicy, out, opt)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "interrupted after 2 of 6 episodes")
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	raw, _ := io.ReadAll(f)
	assert.Equal(t, 2, strings.Count(string(raw), "\n"))
}

// ragen eval against an endpoint whose completions are far longer than
// max_tokens allows (one 50 MB body, one 200 KB text): each fails its own
// episode naming the size, the JSONL stays small, and --truncation keep
// cuts the long text to the cap instead.
func TestEvalCapsAPIReplies(t *testing.T) {
	var n atomic.Int64
	huge := strings.Repeat("x", 50<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		content := "<think>x</think><answer>Right</answer>"
		switch n.Add(1) {
		case 2:
			content = huge
		case 4:
			content = strings.Repeat("y", 200<<10)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}}})
	}))
	defer srv.Close()
	dir := t.TempDir()
	common := []string{"eval", "--policy", "api", "--base-url", srv.URL + "/v1", "--api-model", "stub",
		"--max-retries", "0", "--request-timeout", "20s", "--max-failures", "3",
		"es_manager.val.env_groups=5", "es_manager.val.group_size=1", "es_manager.val.env_configs.tags=[SimpleSokoban]",
		"es_manager.val.env_configs.n_groups=[5]", "agent_proxy.max_turn=1", "+model_config.max_concurrency=1"}
	out := filepath.Join(dir, "capped.jsonl")
	require.NoError(t, run(context.Background(), append(append([]string{}, common...), "--out", out)))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Less(t, len(raw), 1<<20, "the JSONL holds no huge reply")
	assert.Contains(t, string(raw), "reply body is over the 8388608-byte cap (max_reply_bytes)") // streamed: no Content-Length
	assert.Contains(t, string(raw), "reply text of 204800 bytes is over the")
	assert.Equal(t, 2, strings.Count(string(raw), `"failure": `))

	n.Store(0)
	out = filepath.Join(dir, "keep.jsonl")
	require.NoError(t, run(context.Background(), append(append([]string{}, common...), "--out", out, "--truncation", "keep")))
	raw, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Less(t, len(raw), 1<<20)
	assert.Equal(t, 1, strings.Count(string(raw), `"failure": `), "only the 50 MB body fails; the long text is cut")
}

// Every command has a help line, and every command in the help runs its
// own --help.
func TestHelpListsEveryCommand(t *testing.T) {
	ctx := context.Background()
	err := run(ctx, []string{"no-such-command"})
	require.Error(t, err)
	for _, c := range commands {
		assert.Contains(t, usage, "  "+c.name+" ", c.name)
		assert.Contains(t, err.Error(), c.name)
		assert.NotEmpty(t, c.line, c.name)
		require.NoError(t, run(ctx, []string{c.name, "--help"}), c.name)
	}
}
