package lean

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"ragen/env"
)

// service-envs.md §3 "Split of formal_statement": the cases are the
// spec's own examples.
func TestSplitStatementSpec(t *testing.T) {
	for _, c := range []struct{ in, imp, pre, body string }{
		{"import Mathlib\nimport Aesop\n\nopen Nat\n\ntheorem t : 1 = 1 := by\n", "import Mathlib\nimport Aesop", "open Nat", "theorem t : 1 = 1 := by"},
		{"open Nat\nimport Foo\ntheorem t := by", "import Foo", "open Nat", "theorem t := by"},                                                       // imports after preamble lines
		{"importantLemma\ntheorem t", "importantLemma", "", "theorem t"},                                                                             // prefix only
		{"theorem_like x\n\n  more", "", "", "theorem_like x\n\n  more"},                                                                             // prefix starts the body; blanks in body kept
		{"definition d := 1", "", "", "definition d := 1"},                                                                                           // "def" prefix
		{"@[simp] theorem t\nlemma l", "", "@[simp] theorem t", "lemma l"},                                                                           // attribute line is preamble
		{"private lemma p\nnoncomputable def d\n-- theorem c\n/-- doc -/", "", "private lemma p\nnoncomputable def d\n-- theorem c\n/-- doc -/", ""}, // no keyword line
		{"-- just a comment", "", "-- just a comment", ""},
		{"theorem t\nimport X", "", "", "theorem t\nimport X"}, // imports only before the body
		{"  example : True := trivial\r\n", "", "", "example : True := trivial"},
	} {
		imp, pre, body := SplitStatement(c.in)
		if imp != c.imp || pre != c.pre || body != c.body {
			t.Errorf("SplitStatement(%q) = %q, %q, %q; want %q, %q, %q", c.in, imp, pre, body, c.imp, c.pre, c.body)
		}
	}
}

// service-envs.md §3 "Dataset": blank rows skipped, only
// natural_language_statement, name/id/hf_i, upstream's error texts.
func TestLoadSpec(t *testing.T) {
	ts, err := Load(Config{DatasetNameOrPath: "testdata/theorems.jsonl", DatasetSplit: "train"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].Name != "two_add_two" || ts[1].Name != "hf_1" || ts[2].Name != "mc" ||
		ts[1].Informal != strings.Split(ts[1].Informal, "ignored")[0] || !strings.HasPrefix(ts[1].Informal, "If p and q") || ts[2].Informal != "" {
		t.Fatalf("%+v", ts)
	}
	if ts[0].Imports != "import Mathlib\nimport Aesop" || ts[0].Preamble != "set_option maxHeartbeats 400000\n\nopen Nat\n\n/-- Two plus two is four. -/" {
		t.Errorf("%+v", ts[0])
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := osWriteFile(p, text); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ path, want string }{
		{"", "LeanEnv requires a dataset_name to load training samples."},
		{write("blank.jsonl", `{"formal_statement": " ", "x": 1}`+"\n"+`{"formal_statement": 3, "y": null}`+"\n"), "Dataset " + dir + "/blank.jsonl yielded no usable samples. Available columns: ['formal_statement', 'x', 'y']"},
		{dir + "/missing.jsonl", "Failed to load dataset " + dir + "/missing.jsonl (train): dataset \"" + dir + "/missing.jsonl\" not found locally"},
	} {
		_, err := Load(Config{DatasetNameOrPath: c.path, DatasetSplit: "train"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.path, err, c.want)
		}
	}
}

func newFake(t *testing.T, ts []Theorem, cfg func(*Config), c Checker) *Env {
	t.Helper()
	conf := DefaultConfig()
	conf.MaxSteps = 3
	if cfg != nil {
		cfg(&conf)
	}
	e, err := NewWithChecker(conf, ts, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ResetIndex(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	return e
}

// script is a Checker answering from a list and recording proof texts.
type script struct {
	replies []Reply
	errs    []error
	codes   []string
}

func (s *script) Check(_ context.Context, id, code string) (Reply, error) {
	s.codes = append(s.codes, code)
	i := len(s.codes) - 1
	var err error
	if i < len(s.errs) {
		err = s.errs[i]
	}
	if i < len(s.replies) {
		return s.replies[i], err
	}
	return Reply{}, err
}

// service-envs.md §3 "Proof text".
func TestProofTextSpec(t *testing.T) {
	for _, c := range []struct {
		th      Theorem
		imports string
		tactics []string
		want    string
	}{
		{Theorem{Body: "theorem t := by"}, "import A", []string{"simp"}, "import A\n\ntheorem t := by\n  simp\n"},
		{Theorem{Imports: "import B", Preamble: "open Nat", Body: "theorem t := by"}, "import A", []string{"a", "  ", "b\nc"}, "import B\n\nopen Nat\n\ntheorem t := by\n  a\n  b\nc\n"},
		{Theorem{Body: "theorem t := by"}, "", nil, "theorem t := by\n"},
		{Theorem{Preamble: "-- only"}, "", nil, "-- only\n"}, // lines ["-- only", ""] joined already end in a newline
		{Theorem{Body: "theorem t := by"}, "\n import A \n", nil, "import A\n\ntheorem t := by\n"},
	} {
		e := newFake(t, []Theorem{c.th}, func(cf *Config) { cf.DefaultImports = c.imports }, &script{})
		if got := e.ProofText(c.tactics); got != c.want {
			t.Errorf("ProofText(%+v, %q) = %q, want %q", c.th, c.tactics, got, c.want)
		}
	}
}

func ok(resp map[string]any) Reply { return Reply{Results: []Result{{ID: "x", Response: resp}}} }
func errReply(s string) Reply      { return Reply{Results: []Result{{ID: "x", Error: &s}}} }

func msg(sev, data string) map[string]any {
	return map[string]any{"severity": sev, "pos": map[string]any{"line": int64(3), "column": int64(2)}, "data": data}
}

// service-envs.md §3 "Interpretation" table.
func TestInterpretSpec(t *testing.T) {
	sorry := []any{map[string]any{"pos": map[string]any{}, "endPos": map[string]any{}, "goal": "⊢ p"}}
	for _, c := range []struct {
		name      string
		r         Reply
		err       error
		status    Status
		acc, succ bool
		msgs      []map[string]any
	}{
		{"request failed", Reply{}, &RequestError{"Request failed after 3 retries"}, "server_error", false, false, []map[string]any{{"severity": "error", "data": "Request failed after 3 retries"}}},
		{"request timed out", Reply{}, &RequestError{"Read Timed Out"}, "timeout", false, false, []map[string]any{{"severity": "error", "data": "Read Timed Out"}}},
		{"empty results", Reply{}, nil, "server_error", false, false, []map[string]any{{"severity": "error", "data": "Empty response from Lean server."}}},
		{"error", errReply("REPL crashed"), nil, "error", false, false, []map[string]any{{"severity": "error", "data": "REPL crashed"}}},
		{"error timed out", errReply("Lean REPL command TIMED OUT"), nil, "timeout", false, false, []map[string]any{{"severity": "error", "data": "Lean REPL command TIMED OUT"}}},
		{"error timeout word", errReply("timeout"), nil, "error", false, false, []map[string]any{{"severity": "error", "data": "timeout"}}},
		{"repl error object", ok(map[string]any{"message": "unknown env"}), nil, "error", false, false, []map[string]any{{"severity": "error", "data": "unknown env", "pos": map[string]any{}}}},
		{"empty response", ok(map[string]any{}), nil, "valid", true, true, []map[string]any{}},
		{"unsolved", ok(map[string]any{"messages": []any{msg("error", "Unsolved Goals ⊢ p")}}), nil, "valid", true, false, []map[string]any{msg("error", "Unsolved Goals ⊢ p")}},
		{"blocking", ok(map[string]any{"messages": []any{msg("error", "unknown tactic")}}), nil, "invalid", false, false, []map[string]any{msg("error", "unknown tactic")}},
		{"warning", ok(map[string]any{"messages": []any{msg("warning", "declaration uses 'sorry'")}}), nil, "valid", true, true, []map[string]any{msg("warning", "declaration uses 'sorry'")}},
		{"sorries", ok(map[string]any{"sorries": sorry}), nil, "invalid", false, false, []map[string]any{}},
	} {
		o := Interpret(c.r, c.err)
		if o.Status != c.status || o.Accepted != c.acc || o.Success != c.succ || !reflect.DeepEqual(o.Messages, c.msgs) {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
}

// service-envs.md §3 "Step": summation order and the defaults' values
// 0.9, -1.1, 10.9, -2.1, -1.1 (accepted at the limit), -3.1, -4.1; info keys.
func TestStepRewardsSpec(t *testing.T) {
	th := []Theorem{{Body: "theorem t := by"}}
	unsolved := ok(map[string]any{"messages": []any{msg("error", "unsolved goals")}})
	rejected := ok(map[string]any{"messages": []any{msg("error", "bad")}})
	solved := Reply{Results: []Result{{ID: "x", Response: map[string]any{}, Diagnostics: map[string]any{"cpu_max": 1.5}}}}
	timeout := errReply("timed out")
	for _, c := range []struct {
		name    string
		replies []Reply
		want    []float64
		done    []bool
	}{
		{"accepted", []Reply{unsolved}, []float64{0.9}, []bool{false}},
		{"rejected", []Reply{rejected}, []float64{-1.1}, []bool{false}},
		{"success", []Reply{solved}, []float64{10.9}, []bool{true}},
		{"timeout", []Reply{timeout}, []float64{-2.1}, []bool{false}},
		{"accepted at limit", []Reply{unsolved, unsolved, unsolved}, []float64{0.9, 0.9, -1.1}, []bool{false, false, true}},
		{"rejected at limit", []Reply{rejected, rejected, rejected}, []float64{-1.1, -1.1, -3.1}, []bool{false, false, true}},
		{"timeout at limit", []Reply{rejected, rejected, timeout}, []float64{-1.1, -1.1, -4.1}, []bool{false, false, true}},
	} {
		e := newFake(t, th, nil, &script{replies: c.replies})
		for i := range c.replies {
			r, err := e.Step(context.Background(), env.Action{Text: "simp"})
			if err != nil {
				t.Fatal(err)
			}
			if !near(r.Reward, c.want[i]) || r.Done != c.done[i] {
				t.Errorf("%s step %d: reward %v done %v, want %v %v", c.name, i, r.Reward, r.Done, c.want[i], c.done[i])
			}
		}
	}
	// Info keys: exactly these, diagnostics only when non-empty.
	e := newFake(t, th, nil, &script{replies: []Reply{solved}})
	r, _ := e.Step(context.Background(), env.Action{Text: "simp"})
	want := env.Info{"action_is_valid": true, "action_is_effective": true, "accepted": true, "success": true,
		"messages": []string{"  (no Lean messages)"}, "message_objects": []any{}, "diagnostics": map[string]any{"cpu_max": 1.5}}
	if !reflect.DeepEqual(r.Info, want) {
		t.Errorf("info %#v\nwant %#v", r.Info, want)
	}
	e = newFake(t, th, nil, &script{replies: []Reply{rejected}})
	r, _ = e.Step(context.Background(), env.Action{Text: "bad"})
	want = env.Info{"action_is_valid": false, "action_is_effective": false, "accepted": false, "success": false,
		"messages": []string{"  01. [ERROR 3:2] bad"}, "message_objects": []any{msg("error", "bad")}}
	if !reflect.DeepEqual(r.Info, want) {
		t.Errorf("info %#v\nwant %#v", r.Info, want)
	}
	// Only "" is empty: no request, -1.1, and -2 more at the limit.
	sc := &script{}
	e = newFake(t, th, func(c *Config) { c.MaxSteps = 2 }, sc)
	r, _ = e.Step(context.Background(), env.Action{Text: ""})
	want = env.Info{"action_is_valid": false, "action_is_effective": false, "accepted": false, "success": false,
		"messages": []string{"  01. [ERROR] Empty tactic is not allowed."}, "message_objects": []any{map[string]any{"severity": "error", "data": "Empty tactic is not allowed."}}}
	if !near(r.Reward, -1.1) || r.Done || len(sc.codes) != 0 || !reflect.DeepEqual(r.Info, want) {
		t.Errorf("empty: %+v (%d requests)", r, len(sc.codes))
	}
	if r, _ = e.Step(context.Background(), env.Action{Text: ""}); !near(r.Reward, -3.1) || !r.Done {
		t.Errorf("empty at limit: %+v", r)
	}
	// A whitespace-only tactic is sent, accepted on "unsolved goals",
	// counted, and absent from the proof text (QUIRK).
	sc = &script{replies: []Reply{unsolved, unsolved}}
	e = newFake(t, th, func(c *Config) { c.DefaultImports = "" }, sc)
	e.Step(context.Background(), env.Action{Text: "  "})
	e.Step(context.Background(), env.Action{Text: "simp"})
	if sc.codes[0] != "theorem t := by\n" || sc.codes[1] != "theorem t := by\n  simp\n" ||
		!strings.Contains(e.Render(), "accepted tactics: 2") || !strings.Contains(e.Render(), "  01.    [✓ accepted]") {
		t.Errorf("%q\n%s", sc.codes, e.Render())
	}
	// A cancelled context is an env error, not a scored outcome.
	e = newFake(t, th, nil, &script{errs: []error{context.Canceled}})
	if _, err := e.Step(context.Background(), env.Action{Text: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
}

// service-envs.md §3 "Message line".
func TestFormatMessagesSpec(t *testing.T) {
	for _, c := range []struct {
		m     map[string]any
		limit int
		want  string
	}{
		{msg("error", "bad"), 0, "  01. [ERROR 3:2] bad"},
		{map[string]any{"severity": "error", "pos": map[string]any{"line": int64(3), "column": int64(2)}, "endPos": map[string]any{"line": int64(3), "column": int64(10)}, "data": "x"}, 0, "  01. [ERROR 3:2 → 3:10] x"},
		{map[string]any{"severity": "error", "pos": map[string]any{"line": int64(3)}, "endPos": nil, "data": "Unsolved goals\n⊢ p"}, 0, "  01. [UNSOLVED GOALS 3] Unsolved goals\n⊢ p"},
		{map[string]any{"data": "no severity  "}, 0, "  01. [INFO] no severity"},
		{map[string]any{"severity": nil, "message": "via message", "pos": map[string]any{}}, 0, "  01. [NONE] via message"},
		{map[string]any{"severity": "warning", "data": "  abcdefghij  "}, 8, "  01. [WARNING] abcde..."},
		{map[string]any{"severity": "info", "data": "  abcdefgh  "}, 8, "  01. [INFO] abcdefgh"},
		{map[string]any{"severity": "info"}, 0, "  01. [INFO]"},
		// The "unsolved goals" test sees the truncated text (upstream).
		{msg("error", "error: unsolved goals x"), 10, "  01. [ERROR 3:2] error: ..."},
		// Limits below 3 cut as a Python slice text[:limit-3] does.
		{map[string]any{"severity": "info", "data": "abcdef"}, 2, "  01. [INFO] abcde..."},
		{map[string]any{"severity": "info", "data": "abcdef"}, 1, "  01. [INFO] abcd..."},
		{map[string]any{"severity": "info", "data": " ab "}, 1, "  01. [INFO] ..."},
	} {
		if got := FormatMessages([]map[string]any{c.m}, "  ", c.limit); len(got) != 1 || got[0] != c.want {
			t.Errorf("FormatMessages(%v) = %q, want %q", c.m, got, c.want)
		}
	}
}

// service-envs.md §3 "Request" and "Reply schema", against a loopback
// stand-in.
func TestRequestSpec(t *testing.T) {
	var got map[string]any
	var auth string
	reply := `{"results": [{"id": "x", "time": 0.1, "error": null, "response": {"messages": [], "extra": 1}, "diagnostics": {"repl_uuid": "u", "other": 2}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		w.Write([]byte(reply))
	}))
	defer srv.Close()
	t.Setenv("LEAN_SERVER_API_KEY", "")
	t.Setenv("LEANSERVER_API_KEY", "k2")
	cfg := DefaultConfig()
	cfg.ServerURL, cfg.RequestTimeout = srv.URL+"/", 30.9
	c := NewClient(cfg)
	r, err := c.Check(context.Background(), NewSnippetID(), "code")
	if err != nil {
		t.Fatal(err)
	}
	snip := got["snippets"].([]any)[0].(map[string]any)
	if got["timeout"] != 30.0 || got["debug"] != true || got["reuse"] != true || got["infotree"] != "tactics" || len(got) != 5 ||
		!regexp.MustCompile(`^ragen-proof-[0-9a-f]{32}$`).MatchString(snip["id"].(string)) || snip["code"] != "code" || auth != "Bearer k2" {
		t.Errorf("request %v auth %q", got, auth)
	}
	if !reflect.DeepEqual(r.Results[0].Diagnostics, map[string]any{"repl_uuid": "u"}) || !reflect.DeepEqual(r.Results[0].Response, map[string]any{"messages": []any{}}) {
		t.Errorf("unknown keys kept: %+v", r.Results[0])
	}
	for _, bad := range []string{
		`{"results": [{"id": "x", "response": {"messages": [{"severity": "ERROR", "pos": {"line": 1, "column": 0}, "data": "d"}]}}]}`,
		`{"results": [{"id": "x", "response": {"messages": [{"severity": "error", "data": "d"}]}}]}`,
		`{"results": [{"id": "x", "error": ""}]}`,
		`{"results": [{"id": "x", "error": "e", "response": {}}]}`,
	} {
		reply = bad
		_, err := c.Check(context.Background(), "id", "code")
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(re.Text, "validation error") {
			t.Errorf("%s: %v", bad, err)
		}
		if o := Interpret(Reply{}, err); o.Status != "server_error" {
			t.Errorf("%s: status %s", bad, o.Status)
		}
	}
	// Non-JSON and non-2xx replies are retried, then fail with upstream's text.
	reply = "<html>"
	c.MaxRetries, c.wait = 2, func(int) time.Duration { return time.Millisecond }
	if _, err := c.Check(context.Background(), "id", "code"); err == nil || err.Error() != "Request failed after 2 retries" {
		t.Errorf("non-JSON: %v", err)
	}
	if d := backoff(1) + backoff(2) + backoff(3) + backoff(5); d != (1+2+4+10)*time.Second {
		t.Errorf("backoff %v", d)
	}
}

// Python's textwrap.wrap (expected lists printed by CPython).
func TestTextWrap(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"If p and q both hold, then q and p hold. This is a deliberately long informal statement so that the rendered view has to wrap it over more than one line of text.", 88,
			[]string{"If p and q both hold, then q and p hold. This is a deliberately long informal statement", "so that the rendered view has to wrap it over more than one line of text."}},
		{"\tfoo\tbar baz\nqux", 10, []string{"foo", "bar baz", "qux"}},
		{"  lead space words here", 10, []string{"  lead", "space", "words here"}},
		{strings.Repeat("x", 25), 10, []string{"xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"}},
		{"", 88, nil},
		// A chunk of Unicode whitespace is dropped at a line's end (Python
		// tests chunk.strip() == ""), only once, and kept inside a line.
		{strings.Repeat("w", 86) + " \u00a0 next", 88, []string{strings.Repeat("w", 86) + " ", "next"}},
		{"word \u00a0", 88, []string{"word "}},
		{"a \u3000 b", 88, []string{"a \u3000 b"}},
		{"\u00a0 lead", 88, []string{"\u00a0 lead"}},
		{strings.Repeat("x ", 43) + "\u3000 y", 88, []string{strings.Repeat("x ", 42) + "x \u3000", "y"}},
		// Hyphenated words break after a hyphen between letters, em-dashes
		// are chunks of their own, and a long word breaks after its last
		// hyphen that fits (40,000 random strings matched CPython 3.11).
		{"A well-known state-of-the-art x-ray result, end.--Next e-mail", 12,
			[]string{"A well-known", "state-of-", "the-art", "x-ray", "result, end.", "--Next", "e-mail"}},
		{"pre--post word-", 6, []string{"pre--", "post", "word-"}},
		{"ab-cd-ef-gh", 5, []string{"ab-", "cd-", "ef-gh"}},
		{"--lead x-y-z", 4, []string{"--le", "ad x", "-y-z"}},
		{"é-é Ⅻ-ab_c-d", 5, []string{"é-é Ⅻ", "-ab_c", "-d"}},
	} {
		if got := textWrap(c.in, c.width); !reflect.DeepEqual(got, c.want) {
			t.Errorf("textWrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

func osWriteFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

// Upstream's httpx client does not follow redirects; raise_for_status
// fails a 3xx reply, so every attempt fails (service-envs.md §3 "Request").
func TestRedirectNotFollowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/check" {
			http.Redirect(w, r, "/other", http.StatusTemporaryRedirect)
			return
		}
		w.Write([]byte(`{"results": [{"id": "x", "time": 0.1, "response": {}}]}`))
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.ServerURL = srv.URL
	c := NewClient(cfg)
	c.wait = func(int) time.Duration { return time.Millisecond }
	_, err := c.Check(context.Background(), "id", "code")
	if err == nil || err.Error() != "Request failed after 3 retries" {
		t.Fatalf("redirected reply used: %v", err)
	}
	if o := Interpret(Reply{}, err); o.Status != "server_error" || o.Accepted {
		t.Errorf("%+v", o)
	}
	// A caller's own client is not followed either.
	c.HTTP = &http.Client{}
	if _, err := c.Check(context.Background(), "id", "code"); err == nil {
		t.Error("redirect followed with a caller's client")
	}
}

// tenacity's stop_after_attempt(n) stops only after a failed attempt, so
// max_retries 0 still sends one request; its failure keeps the text.
func TestMaxRetriesZeroMakesOneAttempt(t *testing.T) {
	var calls, fail int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if fail > 0 {
			http.Error(w, "busy", 503)
			return
		}
		w.Write([]byte(`{"results": [{"id": "x", "time": 0.1, "response": {}}]}`))
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.ServerURL, cfg.MaxRetries = srv.URL, 0
	c := NewClient(cfg)
	if r, err := c.Check(context.Background(), "id", "code"); err != nil || calls != 1 || len(r.Results) != 1 {
		t.Fatalf("calls %d: %+v %v", calls, r, err)
	}
	fail = 1
	if _, err := c.Check(context.Background(), "id", "code"); err == nil || err.Error() != "Request failed after 0 retries" || calls != 2 {
		t.Errorf("calls %d: %v", calls, err)
	}
}

// Upstream's render: the informal text is stripped before wrapping, the
// proof log says how many earlier steps it leaves out, and the transcript
// is proof_text.rstrip("\n").splitlines().
func TestRenderUpstreamLayout(t *testing.T) {
	th := []Theorem{{Body: "theorem t := by", Informal: "\n  Show that it holds.  "}}
	unsolved := ok(map[string]any{"messages": []any{msg("error", "unsolved goals")}})
	replies := make([]Reply, 7)
	for i := range replies {
		replies[i] = unsolved
	}
	e := newFake(t, th, func(c *Config) { c.DefaultImports, c.MaxSteps = "", 100 }, &script{replies: replies})
	if v := e.Render(); !strings.Contains(v, "Informal statement:\n  Show that it holds.\n") {
		t.Errorf("informal not stripped:\n%s", v)
	}
	for _, tac := range []string{"a", "b", "c", "d", "e", "b\r\nc", "g\n\n"} {
		e.Step(context.Background(), env.Action{Text: tac})
	}
	v := e.Render()
	for _, part := range []string{
		"Proof log (latest 5 steps):\n  ... (2 earlier steps omitted)\n  03. c [✓ accepted]\n",
		"    7 |   b\n    8 | c\n    9 |   g\n\nProof log", // \r\n is one break; trailing newlines all go
	} {
		if !strings.Contains(v, part) {
			t.Errorf("render lacks %q:\n%s", part, v)
		}
	}
}

// Config values upstream accepts and plays with are accepted:
// dataset_split "" (upstream: "train"), max_steps 0 (done after the first
// step), request_timeout 0, max_retries -1 (one attempt), a negative
// message_truncate_limit (no truncation).
func TestLaxConfig(t *testing.T) {
	dir := t.TempDir()
	if err := osWriteFile(dir+"/train.jsonl", `{"formal_statement": "theorem t := by"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DatasetNameOrPath, cfg.DatasetSplit = dir, ""
	cfg.MaxSteps, cfg.RequestTimeout, cfg.MaxRetries, cfg.MessageTruncateLimit = 0, 0, -1, -1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ts, err := Load(cfg)
	if err != nil || len(ts) != 1 {
		t.Fatalf("%+v %v", ts, err)
	}
	e := newFake(t, ts, func(c *Config) { *c = cfg }, &script{replies: []Reply{ok(map[string]any{"messages": []any{msg("error", "  unsolved goals  ")}})}})
	r, _ := e.Step(context.Background(), env.Action{Text: "simp"})
	if !r.Done || !near(r.Reward, -1.1) || r.Info["messages"].([]string)[0] != "  01. [UNSOLVED GOALS 3:2]   unsolved goals" {
		t.Errorf("%+v", r)
	}
}
