package lean

import (
	"bytes"
	"context"
	"encoding/json"
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
	"ragen/internal/pyrand"
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
	if c.MaxSteps < 1 {
		errs = append(errs, fmt.Errorf("lean: max_steps %d must be >= 1", c.MaxSteps))
	}
	if c.RequestTimeout <= 0 || c.HTTPTimeout <= 0 {
		errs = append(errs, errors.New("lean: request_timeout and http_timeout must be positive"))
	}
	if c.MaxRetries < 0 || c.MessageTruncateLimit < 0 {
		errs = append(errs, errors.New("lean: max_retries and message_truncate_limit must be >= 0"))
	}
	if c.DatasetNameOrPath == "" {
		errs = append(errs, errors.New("lean: dataset_name_or_path is empty"))
	}
	return errors.Join(errs...)
}

// Theorem is one dataset record split as upstream splits formal_statement.
type Theorem struct {
	Imports   []string // leading import lines
	Preamble  []string // other lines before the statement
	Statement []string // from the first theorem/lemma/def/example/instance line
	Informal  string
}

var declKeywords = []string{"theorem", "lemma", "def", "example", "instance"}

// SplitStatement splits a formal statement into imports, preamble and
// statement. A trailing "sorry" after the final ":= by" is dropped, so the
// accepted tactics continue the proof.
func SplitStatement(formal, informal string) (Theorem, error) {
	t := Theorem{Informal: informal}
	lines := strings.Split(strings.TrimRight(formal, "\n"), "\n")
	i := 0
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "import ") && len(t.Preamble) == 0 {
			t.Imports = append(t.Imports, lines[i])
			continue
		}
		if slices.ContainsFunc(declKeywords, func(k string) bool { return l == k || strings.HasPrefix(l, k+" ") }) {
			break
		}
		if l == "" && len(t.Preamble) == 0 {
			continue
		}
		t.Preamble = append(t.Preamble, lines[i])
	}
	if i == len(lines) {
		return t, fmt.Errorf("no theorem/lemma/def/example/instance line in formal_statement")
	}
	for len(t.Preamble) > 0 && strings.TrimSpace(t.Preamble[len(t.Preamble)-1]) == "" {
		t.Preamble = t.Preamble[:len(t.Preamble)-1]
	}
	t.Statement = lines[i:]
	last := len(t.Statement) - 1
	if s := strings.TrimRight(t.Statement[last], " \t"); strings.HasSuffix(s, "sorry") {
		s = strings.TrimRight(strings.TrimSuffix(s, "sorry"), " \t")
		if s == "" {
			t.Statement = t.Statement[:last]
		} else {
			t.Statement[last] = s
		}
	}
	return t, nil
}

type rawRecord struct {
	FormalStatement   *string `json:"formal_statement"`
	InformalStatement string  `json:"informal_statement"`
	InformalPrefix    string  `json:"informal_prefix"`
}

func (r rawRecord) theorem() (Theorem, error) {
	if r.FormalStatement == nil {
		return Theorem{}, errors.New(`missing "formal_statement"`)
	}
	inf := r.InformalStatement
	if inf == "" {
		inf = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(r.InformalPrefix), "/--"), "-/"))
	}
	return SplitStatement(*r.FormalStatement, inf)
}

// ReadJSONL reads records with formal_statement (and optionally
// informal_statement or informal_prefix).
func ReadJSONL(r io.Reader) ([]Theorem, error) {
	var out []Theorem
	err := env.ForEachLine(r, 64<<20, func(b []byte) error {
		var rec rawRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return err
		}
		t, err := rec.theorem()
		out = append(out, t)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lean: %w", err)
	}
	return out, nil
}

func readParquet(r io.Reader) ([]Theorem, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("lean: %w", err)
	}
	cols := map[string][]parquet.Cell{}
	for _, n := range []string{"formal_statement", "informal_statement", "informal_prefix"} {
		if slices.Contains(f.Columns(), n) {
			if cols[n], err = f.ReadColumn(n, 0); err != nil {
				return nil, fmt.Errorf("lean: %w", err)
			}
		}
	}
	fs, ok := cols["formal_statement"]
	if !ok {
		return nil, fmt.Errorf("lean: parquet has no formal_statement column (columns: %s)", strings.Join(f.Columns(), ", "))
	}
	str := func(n string, i int) string {
		if c, ok := cols[n]; ok && i < len(c) && len(c[i].Strs) == 1 {
			return c[i].Strs[0]
		}
		return ""
	}
	out := make([]Theorem, 0, len(fs))
	for i := range fs {
		if len(fs[i].Strs) != 1 {
			return nil, fmt.Errorf("lean: parquet row %d: formal_statement is not a string", i)
		}
		s := fs[i].Strs[0]
		t, err := rawRecord{FormalStatement: &s, InformalStatement: str("informal_statement", i), InformalPrefix: str("informal_prefix", i)}.theorem()
		if err != nil {
			return nil, fmt.Errorf("lean: parquet row %d: %w", i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// Load finds the dataset: dataset_name_or_path as a .jsonl/.parquet file,
// or a directory holding {split}.jsonl or {split}.parquet.
func Load(cfg Config) ([]Theorem, error) {
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
		if strings.EqualFold(filepath.Ext(f), ".parquet") || bytes.HasPrefix(b, []byte("PAR1")) {
			ts, err = readParquet(bytes.NewReader(b))
		} else {
			ts, err = ReadJSONL(bytes.NewReader(b))
		}
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, f)
		}
		if len(ts) == 0 {
			return nil, fmt.Errorf("lean: %s holds no theorems", f)
		}
		return ts, nil
	}
	return nil, fmt.Errorf("lean: dataset %q not found locally (tried %s); Hugging Face datasets are not downloaded: export it to a .jsonl or .parquet file with a formal_statement column and set dataset_name_or_path to it",
		p, strings.Join(tried, ", "))
}

// Checker verifies a proof text (the Kimina client, or a stand-in).
type Checker interface {
	Check(ctx context.Context, id, code string) (Result, error)
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
	cur      Theorem
	accepted []string
	steps    int
	log      []logEntry
	last     *feedback
	render   string
}

type feedback struct {
	accepted bool
	messages []Message
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

// NewClient builds the Kimina client of cfg.
func NewClient(cfg Config) *Client {
	key := os.Getenv("LEAN_SERVER_API_KEY")
	if cfg.APIKey != nil {
		key = *cfg.APIKey
	}
	return &Client{URL: cfg.ServerURL, APIKey: key, RequestTimeout: cfg.RequestTimeout,
		HTTPTimeout: time.Duration(cfg.HTTPTimeout * float64(time.Second)), MaxRetries: cfg.MaxRetries, HTTP: &http.Client{}}
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
	e := &Env{cfg: cfg, theorems: ts, checker: c}
	e.set(0)
	return e, nil
}

func (e *Env) set(i int) {
	e.cur = e.theorems[i]
	e.accepted, e.log, e.last, e.steps = nil, nil, nil, 0
	e.render = e.draw()
}

// Reset picks choice(records) under a Python Random seeded with seed.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e.set(pyrand.NewRandom(seed).Intn(len(e.theorems)))
	return e.render, nil
}

// ProofText is the Lean file for the current theorem with tactics.
func (e *Env) ProofText(tactics []string) string {
	imports := e.cur.Imports
	if len(imports) == 0 {
		imports = strings.Split(e.cfg.DefaultImports, "\n")
	}
	lines := append([]string{}, imports...)
	lines = append(lines, "")
	lines = append(lines, e.cur.Preamble...)
	lines = append(lines, "")
	lines = append(lines, e.cur.Statement...)
	for _, t := range tactics {
		lines = append(lines, "  "+t)
	}
	return strings.Join(lines, "\n") + "\n"
}

// Step checks one tactic appended to the accepted ones.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	tactic := strings.TrimSpace(a.Text)
	e.steps++
	reward := e.cfg.StepPenalty
	accepted, success, timedOut := false, false, false
	var msgs []Message
	if tactic == "" {
		reward += e.cfg.InvalidStepReward
		msgs = []Message{{Severity: "error", Data: "empty tactic"}}
	} else {
		cand := append(slices.Clone(e.accepted), tactic)
		res, err := e.checker.Check(ctx, fmt.Sprintf("step-%d", e.steps), e.ProofText(cand))
		switch {
		case errors.Is(err, ErrTimeout):
			timedOut = true
			msgs = []Message{{Severity: "error", Data: "Lean check timed out"}}
		case err != nil:
			e.steps--
			return env.StepResult{}, err
		default:
			msgs = res.Response.Messages
			blocking, anyErr := false, false
			for _, m := range msgs {
				if m.Severity == "error" {
					anyErr = true
					if !strings.Contains(m.Data, "unsolved goals") {
						blocking = true
					}
				}
			}
			noSorry := len(res.Response.Sorries) == 0
			accepted = !blocking && noSorry
			success = !anyErr && noSorry
		}
		if accepted {
			reward += e.cfg.ValidStepReward
			e.accepted = cand
		} else {
			reward += e.cfg.InvalidStepReward
		}
		if success {
			reward += e.cfg.SuccessReward
		}
		if timedOut {
			reward += e.cfg.TimeoutPenalty
		}
	}
	done := success
	if !success && e.steps >= e.cfg.MaxSteps {
		reward += e.cfg.MaxStepsPenalty
		done = true
	}
	e.log = append(e.log, logEntry{tactic, accepted})
	e.last = &feedback{accepted, msgs}
	e.render = e.draw()
	return env.StepResult{Observation: e.render, Reward: reward, Done: done, Info: env.Info{
		"action_is_valid": tactic != "", "action_is_effective": accepted, "success": success,
		"accepted": accepted, "timeout": timedOut, "accepted_tactics": len(e.accepted),
	}}, nil
}

// Render returns the proof state view.
func (e *Env) Render() string { return e.render }

// Close does nothing.
func (e *Env) Close() error { return nil }

func wrap(text string, width int, indent string) []string {
	var out []string
	line := indent
	for _, w := range strings.Fields(text) {
		if line != indent && len(line)+1+len(w) > width {
			out = append(out, line)
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	if line != indent {
		out = append(out, line)
	}
	return out
}

func (e *Env) draw() string {
	var b []string
	b = append(b, fmt.Sprintf("Steps taken: %d/%d | accepted tactics: %d", e.steps, e.cfg.MaxSteps, len(e.accepted)), "", "Informal statement:")
	if inf := wrap(e.cur.Informal, 88, "  "); len(inf) > 0 {
		b = append(b, inf...)
	} else {
		b = append(b, "  (not provided)")
	}
	b = append(b, "", "Proof transcript:")
	proof := strings.Split(strings.TrimSuffix(e.ProofText(e.accepted), "\n"), "\n")
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
		if len(e.last.messages) == 0 {
			b = append(b, "    (no Lean messages)")
		}
		for i, m := range e.last.messages {
			sev := strings.ToUpper(m.Severity)
			if strings.Contains(m.Data, "unsolved goals") {
				sev = "UNSOLVED GOALS"
			}
			if m.Pos != nil {
				sev += fmt.Sprintf(" %d:%d", m.Pos.Line, m.Pos.Column)
				if m.EndPos != nil {
					sev += fmt.Sprintf(" → %d:%d", m.EndPos.Line, m.EndPos.Column)
				}
			}
			text := m.Data
			if n := e.cfg.MessageTruncateLimit; n > 0 && len([]rune(text)) > n {
				text = string([]rune(text)[:n]) + "..."
			}
			b = append(b, fmt.Sprintf("    %02d. [%s] %s", i+1, sev, text))
		}
	}
	return strings.Join(b, "\n")
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
