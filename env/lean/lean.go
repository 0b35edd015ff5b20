package lean

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ragen/env"
	"ragen/env/countdown/parquet"
	"ragen/env/internal/pyjson"
	"ragen/internal/pyrand"
	"ragen/internal/pystr"
)

// Config is the env_config of a lean tag, with upstream's names and
// defaults.
type Config struct {
	DatasetNameOrPath    string  `yaml:"dataset_name_or_path"`
	DatasetSplit         string  `yaml:"dataset_split"`
	ServerURL            string  `yaml:"server_url"`
	APIKey               *string `yaml:"api_key"`
	RequestTimeout       float64 `yaml:"request_timeout"`
	HTTPTimeout          float64 `yaml:"http_timeout"`
	MaxRetries           int     `yaml:"max_retries"`
	MaxSteps             int     `yaml:"max_steps"`
	StepPenalty          float64 `yaml:"step_penalty"`
	ValidStepReward      float64 `yaml:"valid_step_reward"`
	InvalidStepReward    float64 `yaml:"invalid_step_reward"`
	SuccessReward        float64 `yaml:"success_reward"`
	TimeoutPenalty       float64 `yaml:"timeout_penalty"`
	MaxStepsPenalty      float64 `yaml:"max_steps_penalty"`
	DefaultImports       string  `yaml:"default_imports"`
	MessageTruncateLimit int     `yaml:"message_truncate_limit"`
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		DatasetNameOrPath: "CoderBak/minif2f", DatasetSplit: "train", ServerURL: "http://127.0.0.1:8000",
		RequestTimeout: 30, HTTPTimeout: 60, MaxRetries: 3, MaxSteps: 100, StepPenalty: -0.1,
		ValidStepReward: 1, InvalidStepReward: -1, SuccessReward: 10, TimeoutPenalty: -1, MaxStepsPenalty: -2,
		DefaultImports: "import Mathlib\nimport Aesop\nset_option maxHeartbeats 0\nopen BigOperators Real Nat Topology Rat",
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if !strings.HasPrefix(c.ServerURL, "http://") && !strings.HasPrefix(c.ServerURL, "https://") {
		errs = append(errs, fmt.Errorf("lean: server_url %q must be an http(s) URL of a Kimina Lean server", c.ServerURL))
	}
	// Values upstream accepts and plays with are accepted: max_steps < 1
	// (done after the first step), request_timeout 0, max_retries <= 0
	// (one attempt), a negative message_truncate_limit (no truncation).
	if c.RequestTimeout < 0 || c.HTTPTimeout <= 0 {
		errs = append(errs, errors.New("lean: request_timeout must be >= 0 and http_timeout positive"))
	}
	return errors.Join(errs...)
}

// Theorem is one usable dataset row, its formal_statement split as
// upstream splits it (service-envs.md §3).
type Theorem struct {
	Name     string // first truthy of name, id, else hf_{row index}
	Imports  string // import lines before the body, joined by newlines and stripped
	Preamble string // other lines before the body
	Body     string // from the first theorem/lemma/def/example/instance line
	Informal string // natural_language_statement ("" when absent or not a string)
}

var declKeywords = []string{"theorem", "lemma", "def", "example", "instance"}

// SplitStatement splits a formal statement as upstream does: before the
// body, lines starting with "import" (after stripping; a prefix test, so
// "importantLemma" counts) are imports and other lines preamble; the body
// starts at the first line starting with theorem, lemma, def, example or
// instance (prefix test: "theorem_like" starts it, "@[simp] theorem" does
// not). Blank lines before the body go to the preamble. Each part is its
// lines joined by newlines, stripped. With no keyword line the body is "".
func SplitStatement(formal string) (imports, preamble, body string) {
	var imp, pre, bod []string
	started := false
	for _, line := range pystr.SplitLines(formal) {
		s := pystr.Strip(line)
		switch {
		case started:
			bod = append(bod, line)
		case s != "" && strings.HasPrefix(s, "import"):
			imp = append(imp, line)
		case slices.ContainsFunc(declKeywords, func(k string) bool { return strings.HasPrefix(s, k) }):
			started = true
			bod = append(bod, line)
		default:
			pre = append(pre, line)
		}
	}
	join := func(l []string) string { return pystr.Strip(strings.Join(l, "\n")) }
	return join(imp), join(pre), join(bod)
}

// columns collects column names in first-seen order.
type columns struct {
	names []string
	seen  map[string]bool
}

func (c *columns) add(n string) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[n] {
		c.seen[n] = true
		c.names = append(c.names, n)
	}
}

// theoremOf reads row i; ok=false when formal_statement is not a string
// with non-whitespace content (upstream skips such rows).
func theoremOf(i int, get func(string) (any, bool)) (Theorem, bool) {
	fs, _ := get("formal_statement")
	f, ok := fs.(string)
	if !ok || pystr.Strip(f) == "" {
		return Theorem{}, false
	}
	t := Theorem{Name: fmt.Sprintf("hf_%d", i)}
	for _, k := range []string{"name", "id"} {
		if v, ok := get(k); ok && pyjson.Truthy(v) {
			t.Name = pyjson.Str(v)
			break
		}
	}
	if v, ok := get("natural_language_statement"); ok {
		t.Informal, _ = v.(string)
	}
	t.Imports, t.Preamble, t.Body = SplitStatement(f)
	return t, true
}

// ReadJSONL reads JSON rows; rows without a usable formal_statement are
// skipped. It also returns the column names (first-seen order).
func ReadJSONL(r io.Reader) ([]Theorem, []string, error) {
	var out []Theorem
	var cols columns
	i := 0
	err := env.ForEachLine(r, 64<<20, func(b []byte) error {
		if pystr.Strip(string(b)) == "" {
			return nil
		}
		v, err := pyjson.Decode(string(b))
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		o, ok := v.(*pyjson.Object)
		if !ok {
			return fmt.Errorf("row %d: a JSON %s, not an object", i, pyjson.TypeName(v))
		}
		for _, k := range o.Keys {
			cols.add(k)
		}
		if t, ok := theoremOf(i, o.Get); ok {
			out = append(out, t)
		}
		i++
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, cols.names, nil
}

func readParquet(r io.Reader) ([]Theorem, []string, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	cols := map[string][]any{}
	n := 0
	for _, c := range []string{"formal_statement", "natural_language_statement", "name", "id"} {
		if slices.Contains(f.Columns(), c) {
			if cols[c], err = f.ReadValues(c, 0); err != nil {
				return nil, nil, err
			}
			n = max(n, len(cols[c]))
		}
	}
	out := []Theorem{}
	for i := 0; i < n; i++ {
		get := func(c string) (any, bool) {
			col, ok := cols[c]
			if !ok || i >= len(col) {
				return nil, ok
			}
			return pyjson.FromParquet(col[i]), true
		}
		if t, ok := theoremOf(i, get); ok {
			out = append(out, t)
		}
	}
	return out, f.Columns(), nil
}

// Load reads the dataset: dataset_name_or_path as a .jsonl/.parquet file,
// or a directory holding {split}.jsonl or {split}.parquet. Errors use
// upstream's texts (service-envs.md §3 "Dataset").
func Load(cfg Config) ([]Theorem, error) {
	p := cfg.DatasetNameOrPath
	if cfg.DatasetSplit == "" {
		cfg.DatasetSplit = "train" // upstream: dataset_split or "train"
	}
	if p == "" {
		return nil, errors.New("lean: LeanEnv requires a dataset_name to load training samples.")
	}
	ts, cols, err := loadFile(cfg)
	if err != nil {
		return nil, fmt.Errorf("lean: Failed to load dataset %s (%s): %w", p, cfg.DatasetSplit, err)
	}
	if len(ts) == 0 {
		names := make([]any, len(cols))
		for i, c := range cols {
			names[i] = c
		}
		return nil, fmt.Errorf("lean: Dataset %s yielded no usable samples. Available columns: %s", p, pyjson.Str(names))
	}
	return ts, nil
}

func loadFile(cfg Config) ([]Theorem, []string, error) {
	p := cfg.DatasetNameOrPath
	var tried []string
	candidates := []string{p}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		candidates = []string{filepath.Join(p, cfg.DatasetSplit+".jsonl"), filepath.Join(p, cfg.DatasetSplit+".parquet")}
	}
	for _, f := range candidates {
		tried = append(tried, f)
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var ts []Theorem
		var cols []string
		if strings.EqualFold(filepath.Ext(f), ".parquet") || bytes.HasPrefix(b, []byte("PAR1")) {
			ts, cols, err = readParquet(bytes.NewReader(b))
		} else {
			ts, cols, err = ReadJSONL(bytes.NewReader(b))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w (in %s)", err, f)
		}
		return ts, cols, nil
	}
	return nil, nil, fmt.Errorf("dataset %q not found locally (tried %s); Hugging Face datasets are not downloaded: export it to a .jsonl or .parquet file with a formal_statement column and set dataset_name_or_path to it",
		p, strings.Join(tried, ", "))
}

// Checker verifies a proof text (the Kimina client, or a stand-in). A
// *RequestError is a failed request (scored, not an env error); other
// errors abort the step.
type Checker interface {
	Check(ctx context.Context, id, code string) (Reply, error)
}

// Status is the outcome class of a check: "valid", "invalid", "error",
// "timeout" or "server_error".
type Status string

// Outcome is upstream's interpretation of a check (service-envs.md §3
// "Interpretation").
type Outcome struct {
	Status   Status
	Accepted bool
	Success  bool
	// Messages are the message objects (severity, pos, endPos, data) as
	// the info's message_objects.
	Messages    []map[string]any
	Diagnostics map[string]any // {} when none
}

func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

func failure(status Status, text string) Outcome {
	return Outcome{Status: status, Messages: []map[string]any{{"severity": "error", "data": text}}, Diagnostics: map[string]any{}}
}

// Interpret reads results[0] of a reply (or the request failure err).
func Interpret(r Reply, err error) Outcome {
	if err != nil {
		if containsFold(err.Error(), "timed out") {
			return failure("timeout", err.Error())
		}
		return failure("server_error", err.Error())
	}
	if len(r.Results) == 0 {
		return failure("server_error", "Empty response from Lean server.")
	}
	res := r.Results[0]
	diag := res.Diagnostics
	if diag == nil {
		diag = map[string]any{}
	}
	if res.Error != nil {
		o := failure("error", *res.Error)
		if containsFold(*res.Error, "timed out") {
			o.Status = "timeout"
		}
		o.Diagnostics = diag
		return o
	}
	if m, ok := res.Response["message"]; ok {
		return Outcome{Status: "error", Messages: []map[string]any{{"severity": "error", "data": m, "pos": map[string]any{}}}, Diagnostics: diag}
	}
	o := Outcome{Status: "invalid", Messages: []map[string]any{}, Diagnostics: diag}
	if ms, ok := res.Response["messages"].([]any); ok {
		for _, m := range ms {
			o.Messages = append(o.Messages, m.(map[string]any))
		}
	}
	blocking, anyErr := false, false
	for _, m := range o.Messages {
		if sev, _ := m["severity"].(string); strings.ToLower(sev) == "error" {
			anyErr = true
			if !containsFold(messageText(m), "unsolved goals") {
				blocking = true
			}
		}
	}
	sorries, _ := res.Response["sorries"].([]any)
	o.Accepted = !blocking && len(sorries) == 0
	o.Success = !anyErr && len(sorries) == 0
	if o.Accepted {
		o.Status = "valid"
	}
	return o
}

// messageText is a message's data, else its message, else "".
func messageText(m map[string]any) string {
	for _, k := range []string{"data", "message"} {
		if v, ok := m[k]; ok && v != nil {
			if s := pyjson.Str(v); s != "" {
				return s
			}
		}
	}
	return ""
}

// location is a pos/endPos part: "line:column", "line", or "".
func location(v any) string {
	p, ok := v.(map[string]any)
	if !ok || len(p) == 0 {
		return ""
	}
	l, ok := p["line"]
	if !ok || l == nil {
		return ""
	}
	if c, ok := p["column"]; ok && c != nil {
		return pyjson.Str(l) + ":" + pyjson.Str(c)
	}
	return pyjson.Str(l)
}

// FormatMessages renders message objects as upstream's feedback lines:
// "{indent}{i:02d}. [{SEV}{ LOC}] {data}", right-trimmed, or
// "{indent}(no Lean messages)". truncate > 0 strips the text and cuts it
// to truncate-3 characters + "..." when longer (see truncateText), before
// the "unsolved goals" test.
func FormatMessages(msgs []map[string]any, indent string, truncate int) []string {
	if len(msgs) == 0 {
		return []string{indent + "(no Lean messages)"}
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		sev := "INFO"
		if v, ok := m["severity"]; ok {
			sev = strings.ToUpper(pyjson.Str(v))
		}
		text := messageText(m)
		if truncate > 0 {
			text = truncateText(text, truncate)
		}
		// Upstream tests the truncated text.
		if sev == "ERROR" && containsFold(text, "unsolved goals") {
			sev = "UNSOLVED GOALS"
		}
		var locs []string
		for _, k := range []string{"pos", "endPos"} {
			if l := location(m[k]); l != "" {
				locs = append(locs, l)
			}
		}
		if len(locs) > 0 {
			sev += " " + strings.Join(locs, " → ")
		}
		out[i] = strings.TrimRightFunc(fmt.Sprintf("%s%02d. [%s] %s", indent, i+1, sev, text), pystr.IsSpace)
	}
	return out
}

// truncateText is upstream's _truncate_text for limit > 0: the stripped
// text, cut to text[:limit-3] + "..." when longer than limit (a Python
// slice: for limits 1 and 2 the end counts back from the text's end).
func truncateText(text string, limit int) string {
	r := []rune(pystr.Strip(text))
	if len(r) <= limit {
		return string(r)
	}
	end := limit - 3
	if end < 0 {
		end = max(len(r)+end, 0)
	}
	return string(r[:end]) + "..."
}

type logEntry struct {
	tactic   string
	accepted bool
}

// Env is the Lean theorem-proving environment.
type Env struct {
	cfg      Config
	theorems []Theorem
	checker  Checker
	rng      *pyrand.Random
	cur      *Theorem
	accepted []string
	steps    int
	log      []logEntry
	last     *feedback
	render   string
}

type feedback struct {
	accepted bool
	messages []map[string]any
}

var _ env.BaseEnv = (*Env)(nil)

func init() {
	env.RegisterPromptDefaults("lean", env.PromptDefaults{})
	env.Register("lean", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("lean", DefaultConfig(), envConfig, New)
}

// NewClient builds the Kimina client of cfg: api_key, else the
// environment's LEAN_SERVER_API_KEY, else LEANSERVER_API_KEY.
func NewClient(cfg Config) *Client {
	key := os.Getenv("LEAN_SERVER_API_KEY")
	if key == "" {
		key = os.Getenv("LEANSERVER_API_KEY")
	}
	if cfg.APIKey != nil && *cfg.APIKey != "" {
		key = *cfg.APIKey
	}
	return &Client{URL: cfg.ServerURL, APIKey: key, RequestTimeout: cfg.RequestTimeout,
		HTTPTimeout: time.Duration(cfg.HTTPTimeout * float64(time.Second)), MaxRetries: cfg.MaxRetries, HTTP: &http.Client{}} // redirects are not followed (Client.httpClient)
}

// New loads the dataset and checks that the Lean server answers
// (GET /health), so a missing server is an error before training starts.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ts, err := Load(cfg)
	if err != nil {
		return nil, err
	}
	c := NewClient(cfg)
	if err := c.Health(context.Background()); err != nil {
		return nil, err
	}
	return NewWithChecker(cfg, ts, c)
}

// NewWithChecker builds the env over explicit theorems and checker.
func NewWithChecker(cfg Config, ts []Theorem, c Checker) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(ts) == 0 || c == nil {
		return nil, errors.New("lean: no theorems or no checker")
	}
	return &Env{cfg: cfg, theorems: ts, checker: c, rng: pyrand.NewRandom(0), render: "Lean environment not initialised."}, nil
}

func (e *Env) set(i int) {
	e.cur = &e.theorems[i]
	e.accepted, e.log, e.last, e.steps = nil, nil, nil, 0
	e.render = e.draw()
}

// Len is the number of usable theorems.
func (e *Env) Len() int { return len(e.theorems) }

// Theorem returns the current theorem (the zero Theorem before the first
// reset).
func (e *Env) Theorem() Theorem {
	if e.cur == nil {
		return Theorem{}
	}
	return *e.cur
}

// Reset reseeds the env's Python Random with seed and picks
// records[randbelow(N)]; mode is ignored.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e.rng.Seed(seed)
	e.set(e.rng.RandBelow(len(e.theorems)))
	return e.render, nil
}

// ResetIndex resets to theorem idx mod N (upstream's theorem_idx
// option), leaving the random state alone.
func (e *Env) ResetIndex(ctx context.Context, idx int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	n := len(e.theorems)
	e.set(((idx % n) + n) % n)
	return e.render, nil
}

// ProofText is the Lean file for the current theorem with tactics
// (service-envs.md §3 "Proof text"): imports (or default_imports) and a
// blank line, the preamble and a blank line when there is one, the body,
// then "  "+t for every tactic with non-whitespace content; it ends with a
// newline.
func (e *Env) ProofText(tactics []string) string {
	var th Theorem
	if e.cur != nil {
		th = *e.cur
	}
	var lines []string
	imp := th.Imports
	if imp == "" {
		imp = e.cfg.DefaultImports
	}
	if imp != "" {
		lines = append(lines, pystr.SplitLines(pystr.Strip(imp))...)
		lines = append(lines, "")
	}
	if th.Preamble != "" {
		lines = append(lines, pystr.SplitLines(th.Preamble)...)
		lines = append(lines, "")
	}
	if th.Body != "" {
		lines = append(lines, pystr.SplitLines(th.Body)...)
	}
	for _, t := range tactics {
		if pystr.Strip(t) != "" {
			lines = append(lines, "  "+t)
		}
	}
	out := strings.Join(lines, "\n")
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}

// Step checks one tactic appended to the accepted ones (service-envs.md
// §3 "Step"). Info: action_is_valid, action_is_effective and accepted (all
// "accepted by Lean"), success, messages (formatted lines), message_objects,
// and diagnostics when the server sent any.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	if e.cur == nil {
		return env.StepResult{}, errors.New("lean: Step before Reset")
	}
	tactic := a.Text
	if tactic == "" {
		e.steps++
		reward := e.cfg.StepPenalty + e.cfg.InvalidStepReward
		done := false
		if e.steps >= e.cfg.MaxSteps {
			reward += e.cfg.MaxStepsPenalty
			done = true
		}
		msgs := []map[string]any{{"severity": "error", "data": "Empty tactic is not allowed."}}
		e.log = append(e.log, logEntry{"", false})
		e.last = &feedback{false, msgs}
		e.render = e.draw()
		return env.StepResult{Observation: e.render, Reward: reward, Done: done, Info: env.Info{
			"action_is_valid": false, "action_is_effective": false, "success": false, "accepted": false,
			"messages": FormatMessages(msgs, "  ", e.cfg.MessageTruncateLimit), "message_objects": anyList(msgs),
		}}, nil
	}
	cand := append(slices.Clone(e.accepted), tactic)
	reply, err := e.checker.Check(ctx, NewSnippetID(), e.ProofText(cand))
	var re *RequestError
	if err != nil && !errors.As(err, &re) {
		return env.StepResult{}, fmt.Errorf("lean: %w", err)
	}
	o := Interpret(reply, err)
	if o.Accepted {
		e.accepted = cand
	}
	e.steps++
	reward := e.cfg.StepPenalty
	if o.Accepted {
		reward += e.cfg.ValidStepReward
	} else {
		reward += e.cfg.InvalidStepReward
	}
	if o.Success {
		reward += e.cfg.SuccessReward
	}
	if o.Status == "timeout" {
		reward += e.cfg.TimeoutPenalty
	}
	done := o.Success
	if !done && e.steps >= e.cfg.MaxSteps {
		reward += e.cfg.MaxStepsPenalty
		done = true
	}
	e.log = append(e.log, logEntry{tactic, o.Accepted})
	e.last = &feedback{o.Accepted, o.Messages}
	e.render = e.draw()
	info := env.Info{
		"action_is_valid": o.Accepted, "action_is_effective": o.Accepted, "accepted": o.Accepted, "success": o.Success,
		"messages": FormatMessages(o.Messages, "  ", e.cfg.MessageTruncateLimit), "message_objects": anyList(o.Messages),
	}
	if len(o.Diagnostics) > 0 {
		info["diagnostics"] = o.Diagnostics
	}
	return env.StepResult{Observation: e.render, Reward: reward, Done: done, Info: info}, nil
}

func anyList(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// Render returns the proof state view.
func (e *Env) Render() string { return e.render }

// Close does nothing.
func (e *Env) Close() error { return nil }

func (e *Env) draw() string {
	if e.cur == nil {
		return "Lean environment not initialised."
	}
	var b []string
	b = append(b, fmt.Sprintf("Steps taken: %d/%d | accepted tactics: %d", e.steps, e.cfg.MaxSteps, len(e.accepted)), "", "Informal statement:")
	if inf := textWrap(pystr.Strip(e.cur.Informal), 88); len(inf) > 0 {
		for _, l := range inf {
			b = append(b, "  "+l)
		}
	} else {
		b = append(b, "  (not provided)")
	}
	b = append(b, "", "Proof transcript:")
	// upstream: proof_text.rstrip("\n").splitlines(), the last 40 lines
	proof := pystr.SplitLines(strings.TrimRight(e.ProofText(e.accepted), "\n"))
	if len(proof) == 0 {
		b = append(b, "  (empty proof)")
	}
	start := max(0, len(proof)-40)
	w := max(3, len(fmt.Sprint(len(proof))))
	if start > 0 {
		b = append(b, fmt.Sprintf("  ... (%d earlier lines omitted)", start))
	}
	for i := start; i < len(proof); i++ {
		b = append(b, fmt.Sprintf("  %*d | %s", w, i+1, proof[i]))
	}
	if len(e.log) > 0 {
		b = append(b, "", "Proof log (latest 5 steps):")
		from := max(0, len(e.log)-5)
		if from > 0 {
			b = append(b, fmt.Sprintf("  ... (%d earlier steps omitted)", from))
		}
		for i := from; i < len(e.log); i++ {
			mark := "[✗ rejected]"
			if e.log[i].accepted {
				mark = "[✓ accepted]"
			}
			b = append(b, fmt.Sprintf("  %02d. %s %s", i+1, e.log[i].tactic, mark))
		}
	}
	if e.last != nil {
		b = append(b, "", "Last Lean feedback:", "  accepted: "+pyBool(e.last.accepted), "  messages:")
		b = append(b, FormatMessages(e.last.messages, "", e.cfg.MessageTruncateLimit)...)
	}
	return strings.Join(b, "\n")
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
