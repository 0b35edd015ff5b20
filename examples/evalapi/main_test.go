package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ragen/ragen"
)

// standIn is a loopback OpenAI-compatible server: it reads the arm names
// out of the bandit prompt and answers with the first one.
func standIn(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	arms := regexp.MustCompile(`named (\w+) and (\w+)`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "stand-in" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1].Content
		answer := "none"
		if m := arms.FindStringSubmatch(last); m != nil {
			answer = m[1]
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"stand-in","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}]}`,
			"<think>pick one</think><answer>"+answer+"</answer>")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// An evaluation against the stand-in: every episode makes one request,
// each answer is a valid action, and the trajectories are written.
func TestEvalAgainstStandIn(t *testing.T) {
	srv, calls := standIn(t)
	out := filepath.Join(t.TempDir(), "traj.jsonl")
	var buf bytes.Buffer
	err := run(context.Background(), Options{BaseURL: srv.URL + "/v1", Model: "stand-in", Tag: "Bandit", N: 4, MaxTurns: 1,
		Out: out, Timeout: 10 * time.Second}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(buf.String())
	if calls.Load() != 4 {
		t.Fatalf("%d requests, want 4", calls.Load())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d trajectories", len(lines))
	}
	for _, l := range lines {
		if _, err := ragen.ParseTrajectoryRecord([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(buf.String(), "Bandit: success") || !strings.Contains(buf.String(), "Bandit/action_is_valid                   1.0000") {
		t.Fatalf("output:\n%s", buf.String())
	}
}

// A server that is not there is an error naming the address, not a hang.
func TestUnreachableServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := run(ctx, Options{BaseURL: url + "/v1", Model: "stand-in", Tag: "Bandit", N: 1, MaxTurns: 1, Timeout: time.Second}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("no error")
	}
	t.Log(err)
}
