package dash_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"ragen/dash"
)

// New serves run folders; Handler(addr) adds the checks for the address it
// listens on (loopback: the Host header must be a loopback name). Here one
// run with two metric lines, read back through the API the pages use.
func Example() {
	run, _ := os.MkdirTemp("", "run")
	defer os.RemoveAll(run)
	os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(
		`{"step":1,"rollout/success":0.5}`+"\n"+`{"step":2,"rollout/success":0.75}`+"\n"), 0o644)
	s, err := dash.New(dash.Options{Runs: []string{run}})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler("127.0.0.1:0"))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/api/runs")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	var runs struct {
		Runs []struct {
			ID         string `json:"id"`
			Steps      int    `json:"steps"`
			HasMetrics bool   `json:"has_metrics"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(res.Body).Decode(&runs); err != nil {
		panic(err)
	}
	fmt.Println(res.StatusCode, runs.Runs[0].ID, runs.Runs[0].Steps, runs.Runs[0].HasMetrics)
	// Output: 200 r0 2 true
}
