package dash

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// writeRun writes a run folder like a training run's: metrics (with a
// half-written last line), two rollout files and a filter decision.
func writeRun(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "rollouts"), 0o755))
	metrics := `{"step":0,"data":{"val-env/Bandit/success":0.25}}
{"step":1,"data":{"train/Bandit/success":0.5,"critic/score/mean":0.1,"actor/entropy":null}}
{"step":2,"data":{"train/Bandit/success":0.75,"critic/score/mean":0.3,"val-env/Bandit/success":0.5}}
{"step":3,"data":{"train/Ban`
	must(os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics), 0o644))
	rec := func(id string, env, group int, success bool, reward float64, resp string) ragen.TrajectoryRecord {
		s := 0.0
		if success {
			s = 1
		}
		return ragen.TrajectoryRecord{CustomID: id,
			Messages: []tokenizer.Message{{Role: "user", Content: "pick an arm"}, {Role: "assistant", Content: resp}, {Role: "user", Content: "Blue: 1 points (reward: 1)"}},
			Metadata: ragen.TrajectoryMetadata{EnvID: env, GroupID: group, NumTurns: 1, TotalReward: reward, Success: success,
				Metrics: map[string]float64{"Bandit/success": s, "Bandit/action_is_valid": 1}}}
	}
	recs := []ragen.TrajectoryRecord{
		rec("traj_0", 0, 0, true, 1, "<think>blue pays</think><answer>Blue</answer>"),
		rec("traj_1", 1, 0, false, 0.2, "<think>red</think><answer>Red || Blue</answer>"),
		rec("traj_2", 2, 1, false, -0.1, "I don't know"),
	}
	fh, err := os.Create(filepath.Join(dir, "rollouts", "train_step_1.jsonl"))
	must(err)
	must(ragen.WriteJSONL(fh, recs))
	must(fh.Close())
	fh, err = os.Create(filepath.Join(dir, "rollouts", "val_step_0.jsonl"))
	must(err)
	must(ragen.WriteJSONL(fh, recs[:1]))
	must(fh.Close())
	must(os.WriteFile(filepath.Join(dir, "rollouts", "filter_step_1.json"), []byte(
		`{"step":1,"strategy":"top_k","value":0.5,"type":"largest","metric":"reward_variance","unchanged":false,"groups":[{"group_id":0,"rewards":[1,0.2],"reward_std":0.4,"kept":true},{"group_id":1,"rewards":[-0.1,-0.1],"reward_std":0,"kept":false}]}`), 0o644))
}

func newTestServer(t *testing.T, opt Options) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler("127.0.0.1:0"))
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts
}

func getJSON(t *testing.T, u string, want int, out any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d: %s", u, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, b)
		}
	}
}

func TestRunsMetricsAndSweep(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	sweep := filepath.Join(dir, "sweep")
	writeRun(t, run)
	writeRun(t, filepath.Join(sweep, "lr=1e-4"))
	writeRun(t, filepath.Join(sweep, "lr=1e-5"))
	os.WriteFile(filepath.Join(sweep, "summary.md"), []byte("| job | success |\n"), 0o644)
	_, ts := newTestServer(t, Options{Runs: []string{run, sweep}})

	var runs struct {
		Runs []struct {
			ID, Name, Sweep string
			Steps           int
			HasFilter       bool `json:"has_filter"`
			Rollouts        int
		}
		Sweeps []map[string]string
	}
	getJSON(t, ts.URL+"/api/runs", 200, &runs)
	if len(runs.Runs) != 3 || runs.Runs[0].ID != "r0" || runs.Runs[1].ID != "r1/lr=1e-4" || runs.Runs[1].Sweep != "r1" {
		t.Fatalf("runs = %+v", runs.Runs)
	}
	if r := runs.Runs[0]; r.Steps != 3 || !r.HasFilter || r.Rollouts != 2 {
		t.Fatalf("run 0 = %+v (want 3 complete records, a filter file, 2 rollout files)", r)
	}
	if len(runs.Sweeps) != 1 || runs.Sweeps[0]["id"] != "r1" {
		t.Fatalf("sweeps = %v", runs.Sweeps)
	}

	var m struct {
		Records []struct {
			Step int
			Data map[string]*float64
		}
	}
	getJSON(t, ts.URL+"/api/metrics?run=r0", 200, &m)
	if len(m.Records) != 3 || m.Records[2].Step != 2 || *m.Records[2].Data["critic/score/mean"] != 0.3 {
		t.Fatalf("metrics = %+v", m.Records)
	}
	if v, ok := m.Records[1].Data["actor/entropy"]; !ok || v != nil {
		t.Fatalf("a null metric should stay null, got %v", v)
	}
	getJSON(t, ts.URL+"/api/metrics?run=r0&since=1", 200, &m)
	if len(m.Records) != 1 || m.Records[0].Step != 2 {
		t.Fatalf("since=1: %+v", m.Records)
	}
	// the run finishes writing its line: the next poll sees it
	fh, _ := os.OpenFile(filepath.Join(run, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`dit/success":1.0}}` + "\n")
	fh.Close()
	getJSON(t, ts.URL+"/api/metrics?run=r0&since=2", 200, &m)
	if len(m.Records) != 1 || m.Records[0].Step != 3 {
		t.Fatalf("after the line completed: %+v", m.Records)
	}
	getJSON(t, ts.URL+"/api/metrics?run=r0&since=x", 400, nil)
	getJSON(t, ts.URL+"/api/metrics?run=r9", 404, nil)

	var sw struct {
		Runs []struct {
			Name string
			Last map[string]float64
		}
		Files map[string]string
	}
	getJSON(t, ts.URL+"/api/sweep?sweep=r1", 200, &sw)
	if len(sw.Runs) != 2 || sw.Runs[0].Name != "lr=1e-4" || sw.Runs[0].Last["val-env/Bandit/success"] != 0.5 {
		t.Fatalf("sweep = %+v", sw.Runs)
	}
	if sw.Files["summary.md"] == "" {
		t.Fatalf("sweep summary file missing: %v", sw.Files)
	}
}

func TestTrajectoriesAndFilter(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	_, ts := newTestServer(t, Options{Runs: []string{run}})
	type resp struct {
		Total, Matched int
		Tags           []string
		Trajectories   []Trajectory
	}
	var r resp
	getJSON(t, ts.URL+"/api/trajectories?run=r0&file=train_step_1.jsonl", 200, &r)
	if r.Total != 3 || len(r.Trajectories) != 3 || len(r.Tags) != 1 || r.Tags[0] != "Bandit" {
		t.Fatalf("all: %+v", r)
	}
	t0 := r.Trajectories[0]
	if len(t0.Turns) != 1 || t0.Turns[0].Think != "blue pays" || t0.Turns[0].Answer != "Blue" || t0.Turns[0].Actions[0] != "Blue" ||
		t0.Turns[0].State != "pick an arm" || t0.Final != "Blue: 1 points" || t0.FormatError {
		t.Fatalf("turns of traj_0: %+v final %q", t0.Turns, t0.Final)
	}
	if a := r.Trajectories[1].Turns[0].Actions; len(a) != 2 || a[1] != "Blue" {
		t.Fatalf("two actions expected, got %v", a)
	}
	if !r.Trajectories[2].FormatError || len(r.Trajectories[2].Turns[0].Actions) != 0 {
		t.Fatalf("traj_2 has no <answer>: %+v", r.Trajectories[2])
	}
	for q, want := range map[string][]string{
		"success=yes":                   {"traj_0"},
		"success=no&format_error=no":    {"traj_1"},
		"format_error=yes":              {"traj_2"},
		"group=0":                       {"traj_0", "traj_1"},
		"env=1":                         {"traj_1"},
		"reward_min=0.1&reward_max=0.5": {"traj_1"},
		"tag=Other":                     {},
	} {
		getJSON(t, ts.URL+"/api/trajectories?run=r0&file=train_step_1.jsonl&"+q, 200, &r)
		var got []string
		for _, x := range r.Trajectories {
			got = append(got, x.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: got %v, want %v", q, got, want)
		}
		if r.Matched != len(want) {
			t.Errorf("%s: matched %d, want %d", q, r.Matched, len(want))
		}
	}
	getJSON(t, ts.URL+"/api/trajectories?run=r0&file=train_step_1.jsonl&success=maybe", 400, nil)
	getJSON(t, ts.URL+"/api/trajectories?run=r0&file=train_step_1.jsonl&env=x", 400, nil)

	var f struct{ Steps []FilterStep }
	getJSON(t, ts.URL+"/api/filter?run=r0", 200, &f)
	if len(f.Steps) != 1 || len(f.Steps[0].Groups) != 2 || !f.Steps[0].Groups[0].Kept || f.Steps[0].Groups[1].Kept || f.Steps[0].Strategy != "top_k" {
		t.Fatalf("filter = %+v", f.Steps)
	}
	var files struct{ Files []rolloutFile }
	getJSON(t, ts.URL+"/api/rollouts?run=r0", 200, &files)
	if len(files.Files) != 2 || files.Files[0].Name != "val_step_0.jsonl" || files.Files[1].Kind != "train" {
		t.Fatalf("files = %+v", files.Files)
	}
}

// TestNoPathTraversal: nothing outside the given folders can be read, by
// file name, run id, static path or symlink.
func TestNoPathTraversal(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	writeRun(t, run)
	secret := filepath.Join(dir, "secret.jsonl")
	os.WriteFile(secret, []byte(`{"custom_id": "SECRET", "messages": [], "metadata": {}}`+"\n"), 0o644)
	if err := os.Symlink(secret, filepath.Join(run, "rollouts", "train_step_9.jsonl")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(dir, filepath.Join(run, "up"))
	_, ts := newTestServer(t, Options{Runs: []string{run}})
	for _, p := range []string{
		"/api/trajectories?run=r0&file=../secret.jsonl",
		"/api/trajectories?run=r0&file=" + url.QueryEscape(secret),
		"/api/trajectories?run=r0&file=..%2F..%2Fsecret.jsonl",
		"/api/trajectories?run=r0&file=metrics.jsonl",
		"/api/trajectories?run=r0&file=train_step_9.jsonl",
		"/api/trajectories?run=..&file=secret.jsonl",
		"/api/trajectories?run=r0/..&file=secret.jsonl",
		"/api/metrics?run=" + url.QueryEscape(dir),
		"/static/../secret.jsonl",
		"/static/..%2f..%2fsecret.jsonl",
		"/static/%2e%2e/dash.go",
		"/up/secret.jsonl",
		"/api/sweep?sweep=../",
	} {
		resp, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || strings.Contains(string(b), "SECRET") || strings.Contains(string(b), "package dash") {
			t.Errorf("GET %s: status %d, body %.200s", p, resp.StatusCode, b)
		}
	}
	// the assets themselves are served
	getJSON(t, ts.URL+"/api/config", 200, nil)
	resp, err := http.Get(ts.URL + "/static/app.js")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("app.js: %v %v", err, resp.Status)
	}
	resp.Body.Close()
}

func TestHostAndToken(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	if err := CheckBind("0.0.0.0:8090", ""); err == nil || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("non-loopback without token: %v", err)
	}
	if err := CheckBind("127.0.0.1:8090", ""); err != nil {
		t.Fatal(err)
	}
	if err := CheckBind("8090", ""); err == nil {
		t.Fatal("want an error for a bad address")
	}
	// loopback: a foreign Host (DNS rebinding) is refused
	_, ts := newTestServer(t, Options{Runs: []string{run}})
	req, _ := http.NewRequest("GET", ts.URL+"/api/runs", nil)
	req.Host = "evil.example:8090"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign host: %d", resp.StatusCode)
	}
	// a POST from another origin is refused
	req, _ = http.NewRequest("POST", ts.URL+"/api/play/start", strings.NewReader("{}"))
	req.Header.Set("Origin", "http://evil.example")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST: %d", resp.StatusCode)
	}

	// bound elsewhere: the token is required
	s, err := New(Options{Runs: []string{run}, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(s.Handler("0.0.0.0:8090"))
	defer ts2.Close()
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/api/runs", "", 401},
		{"/api/runs", "Bearer wrong", 401},
		{"/api/runs", "Bearer s3cret", 200},
		{"/runs?token=s3cret", "", 200},
		{"/static/app.js", "", 401},
	} {
		req, _ := http.NewRequest("GET", ts2.URL+c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s (%q): %d, want %d", c.path, c.auth, resp.StatusCode, c.want)
		}
		if c.path == "/runs?token=s3cret" {
			// the cookie set by ?token= lets the page's own requests in
			ck := resp.Cookies()
			if len(ck) != 1 || ck[0].Value != "s3cret" || !ck[0].HttpOnly {
				t.Fatalf("token cookie: %v", ck)
			}
			req, _ := http.NewRequest("GET", ts2.URL+"/api/runs", nil)
			req.AddCookie(ck[0])
			r2, _ := http.DefaultClient.Do(req)
			r2.Body.Close()
			if r2.StatusCode != 200 {
				t.Fatalf("with cookie: %d", r2.StatusCode)
			}
		}
	}
}

// playConfig plays one Bandit env (upstream's tag) for a test.
func playConfig(tag string) (ragen.Config, error) {
	c := ragen.DefaultConfig()
	tags, err := env.DefaultTags()
	if err != nil {
		return c, err
	}
	c.CustomEnvs = ragen.SpecsFromTags(tags)
	c.ESManager.Val = ragen.EnvSetConfig{EnvGroups: 1, GroupSize: 1, EnvConfigs: ragen.EnvConfigs{Tags: []string{tag}, NGroups: []int{1}}}
	c.ESManager.Train = c.ESManager.Val
	return c, c.Validate()
}

// sseEvents reads events from a play session until the stream ends or
// stop says so.
func sseEvents(t *testing.T, ctx context.Context, u string, stop func(PlayEvent) bool) []PlayEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var evs []PlayEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "{}" {
			continue
		}
		var e PlayEvent
		if err := json.Unmarshal([]byte(d), &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
		if stop != nil && stop(e) {
			break
		}
	}
	return evs
}

func post(t *testing.T, u, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v", u, resp.StatusCode, out)
	}
	return out
}

func TestPlayOracleStepByStep(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	_, ts := newTestServer(t, Options{Runs: []string{run}, Play: &PlayOptions{Tags: []string{"Bandit"}, Config: playConfig}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":7,"policy":"oracle"}`)["session"].(string)
	// manual mode: the reset arrives, then nothing until Step
	evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid, func(e PlayEvent) bool { return e.Type == "reset" })
	if len(evs) != 1 || !strings.Contains(evs[0].State, "arm") {
		t.Fatalf("reset: %+v", evs)
	}
	post(t, ts.URL+"/api/play/step?session="+sid, "")
	evs = sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid+"&from=1", nil)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "turn,delta,result,done" {
		t.Fatalf("events %v", types)
	}
	res, done := evs[2], evs[3]
	if len(res.Actions) == 0 || res.Reward == nil || !strings.Contains(res.Response, "<answer>") || done.Success == nil || !*done.Success {
		t.Fatalf("oracle should pick the better arm and succeed: %+v / %+v", res, done)
	}
	// bad requests name the problem
	for body, want := range map[string]string{
		`{"tag":"Nope","seed":1,"policy":"oracle"}`:    "unknown env tag",
		`{"tag":"Bandit","seed":1,"policy":"gpt"}`:     "not offered",
		`{"tag":"Bandit","seed":-1,"policy":"oracle"}`: "non-negative",
		`{"tag":"Bandit","sed":1}`:                     "unknown field",
	} {
		resp, _ := http.Post(ts.URL+"/api/play/start", "application/json", strings.NewReader(body))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	getJSON(t, ts.URL+"/api/play/events?session=nope", 404, nil)
}

// TestPlayOpenAIStream plays through a local OpenAI-compatible server that
// streams its answer in pieces: each piece reaches the page as a delta.
func TestPlayOpenAIStream(t *testing.T) {
	var gotReq map[string]any
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		json.NewDecoder(r.Body).Decode(&gotReq)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{"Blue pays ", "more", "</think>", "<answer>Blue", "</answer>"} {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": piece}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer api.Close()
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	_, ts := newTestServer(t, Options{Runs: []string{run}, Play: &PlayOptions{Tags: []string{"Bandit"}, Config: playConfig,
		API: &OpenAIStreamConfig{BaseURL: api.URL + "/v1", Model: "m"}}})
	var opts struct{ Policies []struct{ ID string } }
	getJSON(t, ts.URL+"/api/play/options", 200, &opts)
	if len(opts.Policies) != 3 || opts.Policies[2].ID != "api" {
		t.Fatalf("policies %+v", opts.Policies)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":1,"policy":"api","auto":true}`)["session"].(string)
	evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid, nil)
	var deltas []string
	var res *PlayEvent
	for i, e := range evs {
		switch e.Type {
		case "delta":
			if e.Turn == 0 {
				deltas = append(deltas, e.Text)
			}
		case "result":
			if res == nil {
				res = &evs[i]
			}
		case "fail":
			t.Fatal(e.Error)
		}
	}
	if len(deltas) != 5 || strings.Join(deltas, "") != "Blue pays more</think><answer>Blue</answer>" {
		t.Fatalf("deltas %q", deltas)
	}
	if res == nil || res.Think != "Blue pays more" || len(res.Actions) != 1 || res.Actions[0] != "Blue" {
		t.Fatalf("result %+v", res)
	}
	if gotReq["stream"] != true || gotReq["model"] != "m" || len(gotReq["messages"].([]any)) == 0 {
		t.Fatalf("request %v", gotReq)
	}
}

func TestPlayAPIErrorIsReported(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"model m not loaded"}}`, http.StatusServiceUnavailable)
	}))
	defer api.Close()
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	_, ts := newTestServer(t, Options{Runs: []string{run}, Play: &PlayOptions{Tags: []string{"Bandit"}, Config: playConfig,
		API: &OpenAIStreamConfig{BaseURL: api.URL, Model: "m"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":1,"policy":"api","auto":true}`)["session"].(string)
	evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid, nil)
	last := evs[len(evs)-1]
	if last.Type != "fail" || !strings.Contains(last.Error, "503") || !strings.Contains(last.Error, "not loaded") {
		t.Fatalf("last event %+v", last)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no runs: want an error")
	}
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	if _, err := New(Options{Runs: []string{f}}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("file as run: %v", err)
	}
	if _, err := New(Options{Runs: []string{"/nonexistent/run"}}); err == nil {
		t.Fatal("missing folder: want an error")
	}
}

// tokenPolicy streams a fixed answer one character at a time.
type tokenPolicy struct{ answer string }

func (p tokenPolicy) Stream(ctx context.Context, req ragen.GenRequest, emit func(string)) (string, error) {
	if len(req.IDs) == 0 || !strings.Contains(req.Prompt, "arm") {
		return "", fmt.Errorf("want the tokenized prompt, got %d ids", len(req.IDs))
	}
	for _, r := range p.answer {
		emit(string(r))
	}
	return p.answer, nil
}

// TestPlayModelLoadsOnce: a model folder is loaded on first use and shared
// by later sessions; a folder that fails to load says so in the stream.
func TestPlayModelLoadsOnce(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	loads := map[string]int{}
	_, ts := newTestServer(t, Options{Runs: []string{run}, Play: &PlayOptions{Tags: []string{"Bandit"}, Config: playConfig,
		Models: []string{"good", "broken"},
		LoadModel: func(ctx context.Context, dir string) (StreamPolicy, tokenizer.Tokenizer, error) {
			loads[dir]++
			if dir == "broken" {
				return nil, nil, fmt.Errorf("no config.json")
			}
			return tokenPolicy{"x</think><answer>A</answer>"}, tokenizer.NewByte(), nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":1,"policy":"model:0","auto":true}`)["session"].(string)
		evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid, nil)
		n := 0
		for _, e := range evs {
			if e.Type == "fail" {
				t.Fatal(e.Error)
			}
			if e.Type == "delta" && e.Turn == 0 {
				n++
			}
		}
		if n != len("x</think><answer>A</answer>") {
			t.Fatalf("%d deltas in turn 0, want one per character", n)
		}
	}
	if loads["good"] != 1 {
		t.Fatalf("model loaded %d times, want once", loads["good"])
	}
	sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":1,"policy":"model:1","auto":true}`)["session"].(string)
	evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid, nil)
	if last := evs[len(evs)-1]; last.Type != "fail" || !strings.Contains(last.Error, "load model broken: no config.json") {
		t.Fatalf("last event %+v", last)
	}
	getJSON(t, ts.URL+"/api/play/options", 200, nil)
	resp, _ := http.Post(ts.URL+"/api/play/start", "application/json", strings.NewReader(`{"tag":"Bandit","seed":1,"policy":"model:2"}`))
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("model:2 of 2: %d", resp.StatusCode)
	}
}
