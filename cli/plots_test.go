package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/track"
)

func writeFile(t *testing.T, path, s string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return path
}

// a trajectory file as ragen eval writes it, and a validation dump
const evalJSONL = `{"custom_id": "traj_0", "messages": [{"role": "user", "content": "pick"}, {"role": "assistant", "content": "<answer>Red</answer>"}], "metadata": {"env_id": 0, "group_id": 0, "num_turns": 1, "total_reward": 1.0, "success": true, "Bandit/success": 1.0}}
{"custom_id": "traj_1", "messages": [{"role": "user", "content": "pick"}, {"role": "assistant", "content": "<b>x</b>"}], "metadata": {"env_id": 1, "group_id": 0, "num_turns": 1, "total_reward": 0.0, "success": false, "Bandit/success": 0.0}}
{"custom_id": "traj_2", "messages": [{"role": "user", "content": "pick"}], "metadata": {"env_id": 2, "group_id": 1, "num_turns": 0, "total_reward": -0.1, "success": false, "Bandit/success": 0.0}}
`

const dumpJSONL = `{"input":"Target: 10","output":"3+5+2","score":1,"step":4,"tag":"Countdown","env_id":0,"group_id":0,"success":true}
{"input":"Target: 10","output":"3+5","score":0,"step":4,"tag":"Countdown","env_id":1,"group_id":0,"success":false}
`

func TestPlotRewardDistAndMatrix(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "eval.jsonl"), evalJSONL)
	b := writeFile(t, filepath.Join(dir, "4.jsonl"), dumpJSONL)
	var out strings.Builder
	files, err := plotRewardDist([]string{a, b}, filepath.Join(dir, "dist"), &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "eval.jsonl: 3 episodes, success 0.333, reward mean 0.3 std")
	require.Contains(t, out.String(), "reward -0.1")
	require.Contains(t, out.String(), "4.jsonl: 2 episodes, success 0.500")
	require.Equal(t, []string{filepath.Join(dir, "dist", "reward_quantiles.png")}, files)

	files, err = plotRewardMatrix(a, filepath.Join(dir, "m"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	csv, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, "step,group_id,reward_std,sample_0,sample_1\n0,0,0.5,1.0,0.0\n0,1,0.0,-0.1\n", string(csv))

	bad := writeFile(t, filepath.Join(dir, "bad.jsonl"), `{"foo": 1}`+"\n")
	_, err = plotRewardMatrix(bad, dir)
	require.ErrorContains(t, err, "bad.jsonl:1: neither a trajectory record")
	require.ErrorContains(t, cmdPlot([]string{"bogus", a}), "valid: grad-analysis, reward-dist, reward-matrix")
}

func TestPlotGradAnalysis(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	j, err := track.OpenJSONL(path, 0)
	require.NoError(t, err)
	for step := 1; step <= 3; step++ {
		m := map[string]float64{"actor/pg_loss": 0.1}
		if step != 2 { // analysis on steps 1 and 3
			for b, v := range []float64{0.5, 1, 2} {
				bk := "grad_norm/bucket_" + string(rune('1'+b)) + "/"
				m[bk+"task"], m[bk+"entropy"], m[bk+"kl"] = v*float64(step), v/2, v/4
				m[bk+"per_token/task"] = v / 100
				m[bk+"reward_std_mean"] = float64(b)
			}
			m["grad_norm/all/task"] = 3
		}
		require.NoError(t, j.Log(step, m))
	}
	require.NoError(t, j.Close())
	files, err := plotGradAnalysis(path, filepath.Join(dir, "ga"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.Contains(t, names, "grad_norm_by_bucket.png")
	require.Contains(t, names, "grad_norm_per_token_by_bucket.png")
	require.Contains(t, names, "grad_norm_task_over_steps.png")
	require.Contains(t, names, "reward_std_per_bucket.png")
	// a run without gradient analysis says what to turn on
	empty := filepath.Join(dir, "empty.jsonl")
	j, err = track.OpenJSONL(empty, 0)
	require.NoError(t, err)
	require.NoError(t, j.Log(1, map[string]float64{"actor/pg_loss": 0.1}))
	require.NoError(t, j.Close())
	_, err = plotGradAnalysis(empty, dir)
	require.ErrorContains(t, err, "trainer.gradient_analysis_mode=True")
}

func TestVisualizeServesEpisodes(t *testing.T) {
	dir := t.TempDir()
	h, err := visualizeHandler(writeFile(t, filepath.Join(dir, "eval.jsonl"), evalJSONL))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(p string) (int, string) {
		resp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/")
	require.Equal(t, 200, code)
	require.Contains(t, body, "3 episodes, success 0.333")
	require.Contains(t, body, `<a href="/ep/2">2</a>`)
	code, body = get("/ep/1")
	require.Equal(t, 200, code)
	require.Contains(t, body, "&lt;b&gt;x&lt;/b&gt;", "model output is escaped")
	code, _ = get("/ep/9")
	require.Equal(t, 404, code)
}
