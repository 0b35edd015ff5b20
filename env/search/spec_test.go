package search

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"ragen/env"
)

// Expected values from service-envs.md §1 "Fallback extraction" (the
// examples are quoted there) and Python's re semantics for the rest.
func TestExtractAnswerSpec(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"The person is Bob.", "n is Bob"},                              // spec: "so" inside "person"
		{"The answer isn't clear, so we go.", "n't clear, so we go"},    // spec: "answer is" prefix of "answer isn't"
		{"Also known as X", "known as X"},                               // spec
		{"I think the answer is Paris.", "Paris"},                       // spec
		{"Answer is: NY.", "Answer is: NY"},                             // spec: too short, step 5
		{"Hi. This is a test", "This is a test"},                        // spec step 5
		{"ok!", "ok!"},                                                  // spec step 6
		{"**ab** *xyz*", "**ab** *xyz*"},                                // spec: no candidate in step 3; step 5 keeps the whole text
		{"<think>maybe Rome</think> so \\boxed{Vienna}", "Vienna"},      // step 2
		{"\\boxed{} and \\boxed{ x }", "x"},                             // step 2: \boxed{} does not match
		{"\\boxed{ }", ""},                                              // step 2: group " " stripped
		{"\\boxed{a{b}c}", "a{b"},                                       // step 2: stops at first }
		{"<THINK>x</THINK> The answer is Lima.", "Lima"},                // case-sensitive think: kept, then step 4
		{"<think>open The answer is Lima.", "Lima"},                     // unclosed tag stays
		{"I believe it is **Lake Victoria** here.", "Lake Victoria"},    // step 3
		{"I would say *Marie Curie* did.", "Marie Curie"},               // step 3 single star
		{"**é**", "**é**"},                                              // stripped candidate too short: step 5/6
		{"**日本語**", "日本語"},                                              // \w is Unicode: CJK counts
		{"Hmm.\u00a0The correct answer is:\u2003Ganymede!", "Ganymede"}, // \s Unicode
		{"Looking at it. Therefore, Khartoum is where.", "Khartoum is where"},
		{"   ", ""},
		{"<think>only thought</think>", ""},
		{strings.Repeat("ab. ", 40), strings.TrimSpace(strings.Repeat("ab. ", 25))}, // step 6: no part longer than 5
	} {
		if got := ExtractAnswer(c.in); got != c.want {
			t.Errorf("ExtractAnswer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// service-envs.md §1 "Scoring": normalisation, EM, strict-greater F1,
// metadata keys; the two worked examples are quoted there.
func TestScoreAnswerSpec(t *testing.T) {
	for _, c := range []struct {
		ans    string
		gts    []string
		want   Scoring
		reward float64
	}{
		{"the Paris", []string{"Paris"}, Scoring{BestMatch: "Paris", F1Score: 1, Precision: 1, Recall: 1, ExactMatch: true, EvaluationMethod: "exact_match"}, 1},
		{"Paris France", []string{"London", "Paris"}, Scoring{BestMatch: "Paris", F1Score: 0.6666666666666666, Precision: 0.5, Recall: 1, EvaluationMethod: "f1_score"}, 0.6666666666666666},
		// strictly greater: the second equal F1 does not replace the first.
		{"a b", []string{"a c", "b d"}, Scoring{}, 0}, // "a" is an article: pred "b"; "a c" → "c" (0), "b d" → 2/3
		{"x y", []string{"x z", "y w"}, Scoring{BestMatch: "x z", F1Score: 0.5, Precision: 0.5, Recall: 0.5, EvaluationMethod: "f1_score"}, 0.5},
		{"Paris", []string{"  paris  "}, Scoring{BestMatch: "paris", F1Score: 1, Precision: 1, Recall: 1, ExactMatch: true, EvaluationMethod: "exact_match"}, 1},
		{"yes", []string{"no"}, Scoring{}, 0},
		{"Paris", nil, Scoring{}, 0},
		// Unicode word boundaries: "éa" is one word, so its "a" stays.
		{"éa", []string{"éa"}, Scoring{BestMatch: "éa", F1Score: 1, Precision: 1, Recall: 1, ExactMatch: true, EvaluationMethod: "exact_match"}, 1},
		{"q", []string{"z q r s t u v w"}, Scoring{}, 0}, // f1 0.2222 < 0.3: incorrect, but best kept
	} {
		got := ScoreAnswer(c.ans, c.gts, 1, 0, 0.3)
		c.want.ExtractedAnswer, c.want.GroundTruths, c.want.F1Threshold, c.want.Reward = c.ans, c.gts, 0.3, c.reward
		if c.ans == "a b" {
			c.want.BestMatch, c.want.F1Score, c.want.Precision, c.want.Recall, c.want.EvaluationMethod = "b d", 2.0/3, 1, 0.5, "f1_score"
			c.want.Reward = 2.0 / 3
		}
		if c.ans == "q" {
			c.want.BestMatch, c.want.F1Score, c.want.Precision, c.want.Recall, c.want.EvaluationMethod = "z q r s t u v w", 2*(1*0.125)/(1.125), 1, 0.125, "f1_score"
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ScoreAnswer(%q, %q) =\n %+v\nwant %+v", c.ans, c.gts, got, c.want)
		}
	}
	if n := Normalize("éa  THE\u00a0Cat's-a An"); n != "éa catsa" { // punctuation goes before articles
		t.Errorf("Normalize: %q", n)
	}
}

// service-envs.md §1 "Step" and "Info per kind": exact key sets and values.
func TestStepInfoSpec(t *testing.T) {
	qs := []Question{{Question: "Capital of France?", GroundTruth: []string{"Paris"}}}
	meta := func(ans string) map[string]any {
		return ScoreAnswer(ans, []string{"Paris"}, 1, 0, 0.3).Metadata()
	}
	for _, c := range []struct {
		action string
		obs    string
		reward float64
		done   bool
		info   env.Info
	}{
		{" search[ rivers ] ", "Search results for ' rivers ':\n" + mockText(" rivers ") + "\n\nAvailable actions: search[<query>], finish[<answer>]", 0, false,
			env.Info{"action_is_effective": true, "action_is_valid": true, "success": false, "action_type": "search", "query": " rivers "}},
		{"search[a] finish[b]", "Search results for 'a] finish[b':\n" + mockText("a] finish[b") + "\n\nAvailable actions: search[<query>], finish[<answer>]", 0, false,
			env.Info{"action_is_effective": true, "action_is_valid": true, "success": false, "action_type": "search", "query": "a] finish[b"}},
		{"search[]", "Search results for '':\n" + mockText("") + "\n\nAvailable actions: search[<query>], finish[<answer>]", 0, false,
			env.Info{"action_is_effective": true, "action_is_valid": true, "success": false, "action_type": "search", "query": ""}},
		{"finish[ Paris ]", "Your answer:  Paris . Reward: 1.00", 1, true,
			env.Info{"action_is_effective": true, "action_is_valid": true, "success": true, "action_type": "finish", "answer": " Paris ", "reward_metadata": meta(" Paris ")}},
		{"finish[Lyon]", "Your answer: Lyon. Reward: 0.00", 0, true,
			env.Info{"action_is_effective": true, "action_is_valid": true, "success": false, "action_type": "finish", "answer": "Lyon", "reward_metadata": meta("Lyon")}},
		{"Search[x]", "Your answer (extracted): Search[x]. Reward: 0.00", 0, true,
			env.Info{"action_is_effective": true, "action_is_valid": false, "success": false, "action_type": "fallback", "raw_action": "Search[x]", "extracted_answer": "Search[x]", "reward_metadata": meta("Search[x]")}},
		{"I think the answer is Paris. ", "Your answer (extracted): Paris. Reward: 1.00", 1, true,
			env.Info{"action_is_effective": true, "action_is_valid": false, "success": true, "action_type": "fallback", "raw_action": "I think the answer is Paris.", "extracted_answer": "Paris", "reward_metadata": meta("Paris")}},
		{" \n ", "Invalid action. Use search[<query>] to search or finish[<answer>] to answer.\nAvailable actions: search[<query>], finish[<answer>]", 0, false,
			env.Info{"action_is_effective": false, "action_is_valid": false, "success": false, "action_type": "invalid"}},
	} {
		cfg := DefaultConfig()
		cfg.MockMode = true
		e, err := NewWithRetriever(cfg, qs, Mock{})
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(context.Background(), 0, env.ModeTrain)
		r, err := e.Step(context.Background(), env.Action{Text: c.action})
		if err != nil {
			t.Fatal(err)
		}
		if r.Observation != c.obs || e.Render() != c.obs || r.Reward != c.reward || r.Done != c.done || !reflect.DeepEqual(r.Info, c.info) {
			t.Errorf("Step(%q) =\n obs %q reward %v done %v info %v\nwant obs %q reward %v done %v info %v",
				c.action, r.Observation, r.Reward, r.Done, r.Info, c.obs, c.reward, c.done, c.info)
		}
	}
}

func mockText(q string) string {
	return "[Document 1] (ID: mock_1, Score: 0.900)\nMock search result for query: '" + q + "'. This is a placeholder document for testing purposes.\n\n" +
		"[Document 2] (ID: mock_2, Score: 0.750)\nAnother mock document related to: '" + q + "'. Replace with real retrieval server for actual training."
}

// service-envs.md §1: every call counts (also empty), and the search on the
// limit step is made and ends the episode.
func TestStepLimitCountsEveryCall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxSteps = 2
	e, _ := NewWithRetriever(cfg, []Question{{Question: "q", GroundTruth: []string{"a"}}}, Mock{})
	e.Reset(context.Background(), 0, env.ModeTrain)
	if r, _ := e.Step(context.Background(), env.Action{Text: ""}); r.Done {
		t.Fatal("empty step 1 ended")
	}
	r, _ := e.Step(context.Background(), env.Action{Text: "search[x]"})
	want := "Search results for 'x':\n" + mockText("x") + "\n\nMaximum search steps reached. Episode ended without an answer."
	if !r.Done || r.Observation != want {
		t.Errorf("%v %q", r.Done, r.Observation)
	}
	e.Reset(context.Background(), 0, env.ModeTrain)
	e.Step(context.Background(), env.Action{Text: "search[x]"})
	if r, _ := e.Step(context.Background(), env.Action{Text: " "}); !r.Done {
		t.Error("empty action at the limit did not end the episode")
	}
}

// service-envs.md §1 "Retrieval client": the reply cases and their texts.
func TestServerTextSpec(t *testing.T) {
	reply := map[string]struct {
		status int
		body   string
		sleep  bool
	}{
		"num":      {200, `{"results": [{"id": 7, "content": "a", "score": 1}, {"id": 7.0, "content": "b", "score": true}, {"id": true, "score": 0.5}, {"id": null, "content": "d"}, {"content": "e", "score": 2.5}]}`, false},
		"list":     {200, `[1]`, false},
		"html":     {200, `<html>`, false},
		"noresult": {200, `{"hits": []}`, false},
		"nullres":  {200, `{"results": null}`, false},
		"emptyobj": {200, `{"results": {}}`, false},
		"strscore": {200, `{"results": [{"id": "d", "content": "x", "score": "0.9"}]}`, false},
		"nulscore": {200, `{"results": [{"id": "d", "content": "x", "score": null}]}`, false},
		"nulcont":  {200, `{"results": [{"id": "d", "content": null, "score": 1}]}`, false},
		"err":      {500, `{"error": "index not loaded"}`, false},
		"errnull":  {503, `{"error": null}`, false},
		"errnokey": {500, `{"detail": "x"}`, false},
		"errlist":  {404, `["error"]`, false},
		"errtext":  {502, `Bad gateway`, false},
		"errnum":   {500, `{"error": 12}`, false},
		"slow":     {200, ``, true},
		"long":     {200, `{"results": [{"id": "d", "content": "` + strings.Repeat("é", 801) + `", "score": 1}]}`, false},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/retrieve" {
			w.WriteHeader(200)
			return
		}
		var q struct{ Query string }
		if err := jsonDecode(r, &q); err != nil {
			w.WriteHeader(400)
			return
		}
		c := reply[q.Query]
		if c.sleep {
			time.Sleep(400 * time.Millisecond)
		}
		w.WriteHeader(c.status)
		w.Write([]byte(c.body))
	}))
	defer srv.Close()
	c := &ServerClient{URL: srv.URL + "//", Timeout: 150 * time.Millisecond}
	for _, tc := range []struct{ q, want string }{
		{"num", "[Document 1] (ID: 7, Score: 1.000)\na\n\n[Document 2] (ID: 7.0, Score: 1.000)\nb\n\n[Document 3] (ID: True, Score: 0.500)\n\n\n[Document 4] (ID: None, Score: 0.000)\nd"},
		{"list", "Search error: 'list' object has no attribute 'get'"},
		{"html", "Search error: Expecting value: line 1 column 1 (char 0)"},
		{"noresult", "No relevant documents found for the query."},
		{"nullres", "No relevant documents found for the query."},
		{"emptyobj", "No relevant documents found for the query."},
		{"strscore", "Search error: Unknown format code 'f' for object of type 'str'"},
		{"nulscore", "Search error: unsupported format string passed to NoneType.__format__"},
		{"nulcont", "Search error: object of type 'NoneType' has no len()"},
		{"err", "Retrieval server error (status 500): index not loaded"},
		{"errnull", "Retrieval server error (status 503): None"},
		{"errnokey", "Retrieval server error (status 500): Unknown error"},
		{"errlist", "Retrieval server error (status 404)"},
		{"errtext", "Retrieval server error (status 502)"},
		{"errnum", "Retrieval server error (status 500): 12"},
		{"slow", "Search request timed out after 0.15 seconds."},
		{"long", "[Document 1] (ID: d, Score: 1.000)\n" + strings.Repeat("é", 800) + "..."},
	} {
		got, err := c.SearchText(context.Background(), tc.q, 4, 4000)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q (err %v)\nwant %q", tc.q, got, err, tc.want)
		}
	}
	// max_total_chars cuts the joined text (code points) and adds "...".
	if got, _ := c.SearchText(context.Background(), "num", 5, 12); got != "[Document 1]..." {
		t.Errorf("cut: %q", got)
	}
	// A dead server: "Could not connect" with the base URL (trailing / dropped).
	srv.Close()
	got, _ := c.SearchText(context.Background(), "num", 5, 4000)
	if got != "Could not connect to retrieval server at "+srv.URL+". Is it running?" {
		t.Errorf("dead: %q", got)
	}
}

func jsonDecode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }

// service-envs.md §1 "Mock mode": the query is inserted verbatim, never
// cut, however long.
func TestMockTextNotCut(t *testing.T) {
	q := strings.Repeat("é", 900)
	got, _ := Mock{}.SearchText(context.Background(), q, 1, 10)
	if got != mockText(q) {
		t.Errorf("%d runes, want %d", len([]rune(got)), len([]rune(mockText(q))))
	}
}

// retrieval_timeout is requests' timeout: it bounds the connect and each
// read, not the whole reply (a reply trickling in within the timeout of
// its last bytes is read); a stall after the headers is a read timeout in
// the body, which requests raises as a ConnectionError ("Could not
// connect"); a stall before them is "timed out".
func TestServerTimeoutPerRead(t *testing.T) {
	body := `{"results": [{"id": "t", "content": "slow", "score": 1}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q struct{ Query string }
		jsonDecode(r, &q)
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		if q.Query == "stall" {
			time.Sleep(400 * time.Millisecond)
			return
		}
		for i := 0; i < len(body); i += 10 {
			time.Sleep(60 * time.Millisecond)
			w.Write([]byte(body[i:min(i+10, len(body))]))
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	c := &ServerClient{URL: srv.URL, Timeout: 250 * time.Millisecond}
	if got, _ := c.SearchText(context.Background(), "trickle", 5, 4000); got != "[Document 1] (ID: t, Score: 1.000)\nslow" {
		t.Errorf("trickle (%d ms in all): %q", 6*60, got)
	}
	if got, _ := c.SearchText(context.Background(), "stall", 5, 4000); got != "Could not connect to retrieval server at "+srv.URL+". Is it running?" {
		t.Errorf("stall: %q", got)
	}
}

// A Python int in env_config stays an int upstream: retrieval_timeout 1
// prints "1" in the timeout message; correct_reward 1 and
// incorrect_reward 0 make the scored rewards ints (0/1 in the prompt),
// while correct_reward * F1 stays a float.
func TestIntConfigValues(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1200 * time.Millisecond)
	}))
	defer srv.Close()
	e, err := FromEnvConfig(map[string]any{"retriever": "server", "retrieval_server_url": srv.URL, "retrieval_timeout": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(context.Background(), 0, env.ModeTrain)
	r, _ := e.Step(context.Background(), env.Action{Text: "search[x]"})
	if !strings.Contains(r.Observation, "Search request timed out after 1 seconds.") {
		t.Errorf("%q", r.Observation)
	}
	qs, _ := BuiltinQuestions()
	truth := qs[0].GroundTruth[0]
	for _, c := range []struct {
		cfg   map[string]any
		ans   string
		isInt bool
	}{
		{map[string]any{"correct_reward": 1, "incorrect_reward": 0}, truth, true},
		{map[string]any{"correct_reward": 1, "incorrect_reward": 0}, "zzz qqq", true},
		{map[string]any{"correct_reward": 1, "incorrect_reward": 0, "f1_threshold": 0.0}, truth + " zzz", false},
		{map[string]any{"correct_reward": 1.0, "incorrect_reward": 0}, truth, false},
		{map[string]any{}, "zzz qqq", false},
	} {
		c.cfg["mock_mode"] = true
		e, err := FromEnvConfig(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(context.Background(), 0, env.ModeTrain)
		r, _ := e.Step(context.Background(), env.Action{Text: "finish[" + c.ans + "]"})
		if r.RewardIsInt != c.isInt {
			t.Errorf("%v finish[%s]: reward %v int %v", c.cfg, c.ans, r.Reward, r.RewardIsInt)
		}
	}
}
