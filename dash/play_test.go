package dash

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ragen/env"
	"ragen/ragen"
)

// Finished sessions do not count against MaxSessions: with a cap of one, a
// second episode starts once the first has finished (its events can still
// be read), while a session still running keeps new ones out with 429.
func TestPlayFinishedSessionsDoNotCount(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	_, ts := newTestServer(t, Options{Runs: []string{run}, Play: &PlayOptions{Tags: []string{"Bandit"}, Config: playConfig, MaxSessions: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var sids []string
	for i := 0; i < 3; i++ {
		sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":1,"policy":"oracle","auto":true}`)["session"].(string)
		evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sid, nil) // to the end of the episode
		if last := evs[len(evs)-1]; last.Type != "done" {
			t.Fatalf("episode %d: last event %+v", i, last)
		}
		sids = append(sids, sid)
	}
	if evs := sseEvents(t, ctx, ts.URL+"/api/play/events?session="+sids[0], nil); len(evs) == 0 {
		t.Fatal("a finished session's events are gone")
	}
	// a manual session waits for Step: it runs, and holds the one place
	sid := post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":1,"policy":"oracle"}`)["session"].(string)
	resp, err := http.Post(ts.URL+"/api/play/start", "application/json", strings.NewReader(`{"tag":"Bandit","seed":2,"policy":"oracle"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "1 play sessions are running") {
		t.Fatalf("second running session: %d %s", resp.StatusCode, b)
	}
	post(t, ts.URL+"/api/play/stop?session="+sid, "")
	post(t, ts.URL+"/api/play/start", `{"tag":"Bandit","seed":2,"policy":"oracle"}`)
}

// textEnv takes free text: no action list, no solver.
type textEnv struct{}

func (textEnv) Reset(context.Context, int64, env.Mode) (string, error) { return "write", nil }
func (textEnv) Step(context.Context, env.Action) (env.StepResult, error) {
	return env.StepResult{}, nil
}
func (textEnv) Render() string { return "write" }
func (textEnv) Close() error   { return nil }

// Only the policies that can play a tag's env are offered for it: random
// actions and the oracle need an action list (or a solver), which an env
// of free text has not; starting one anyway is a 400 that says why.
func TestPlayOffersOnlyPoliciesThatCanPlay(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run)
	def := ragen.DefaultProvider()
	prov := ragen.ProviderFuncs{
		New: func(tag string, spec ragen.EnvSpec) (env.BaseEnv, error) {
			if tag == "Essay" {
				return textEnv{}, nil
			}
			return def.NewEnv(tag, spec)
		},
		Prompt: def.PromptInfo,
	}
	cfg := func(tag string) (ragen.Config, error) {
		c, err := playConfig("Bandit")
		c.CustomEnvs["Essay"] = c.CustomEnvs["Bandit"]
		return c, err
	}
	_, ts := newTestServer(t, Options{Runs: []string{run}, Play: &PlayOptions{Tags: []string{"Bandit", "Essay"}, Config: cfg, Provider: prov,
		API: &OpenAIStreamConfig{BaseURL: "http://127.0.0.1:1", Model: "m"}}})
	var opts struct {
		TagPolicies map[string][]string `json:"tag_policies"`
	}
	getJSON(t, ts.URL+"/api/play/options", 200, &opts)
	if got := strings.Join(opts.TagPolicies["Bandit"], ","); got != "oracle,random,api" {
		t.Errorf("Bandit: %s", got)
	}
	if got := strings.Join(opts.TagPolicies["Essay"], ","); got != "api" {
		t.Errorf("Essay: %s", got)
	}
	for pol, want := range map[string]string{
		"random": "random actions cannot play Essay: its env has no list of actions",
		"oracle": "the oracle cannot play Essay",
	} {
		resp, err := http.Post(ts.URL+"/api/play/start", "application/json", strings.NewReader(`{"tag":"Essay","seed":1,"policy":"`+pol+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) {
			t.Errorf("%s on Essay: %d %s", pol, resp.StatusCode, b)
		}
	}
}
