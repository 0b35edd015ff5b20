package search

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"ragen/env"
	"ragen/env/countdown/parquet"
	"ragen/env/internal/pyjson"
	"ragen/internal/pystr"
)

// Config is the env_config of a search tag: upstream's fields and
// defaults, plus retriever and corpus_path (ours).
type Config struct {
	DatasetName        string  `yaml:"dataset_name"`
	TrainPath          string  `yaml:"train_path"`
	MaxInstances       int     `yaml:"max_instances"`
	RetrievalServerURL string  `yaml:"retrieval_server_url"`
	RetrievalTimeout   float64 `yaml:"retrieval_timeout"`
	MaxSearchResults   int     `yaml:"max_search_results"`
	MaxTotalChars      int     `yaml:"max_total_chars"`
	MaxSteps           int     `yaml:"max_steps"`
	RenderMode         string  `yaml:"render_mode"`
	MockMode           bool    `yaml:"mock_mode"`
	CorrectReward      float64 `yaml:"correct_reward"`
	IncorrectReward    float64 `yaml:"incorrect_reward"`
	F1Threshold        float64 `yaml:"f1_threshold"`

	// Retriever chooses where search[] goes unless mock_mode is on:
	// "bm25" (default: the embedded BM25 index over corpus_path) or
	// "server" (upstream's retrieval server at retrieval_server_url).
	Retriever string `yaml:"retriever"`
	// CorpusPath is a JSONL corpus for the bm25 retriever; "" is the
	// embedded corpus (data/README.md).
	CorpusPath string `yaml:"corpus_path"`

	// IntValues names the fields given as Python ints in env_config
	// ("retrieval_timeout", "correct_reward", "incorrect_reward"):
	// upstream keeps them ints, so the timeout message and the rewards
	// print without ".0". FromEnvConfig fills it from env_config.
	IntValues map[string]bool `yaml:"-"`
}

// DefaultTrainPath is upstream's default train_path; when no file is there
// the embedded question set is used.
const DefaultTrainPath = "data/search/train.parquet"

// DefaultConfig returns upstream's defaults with the BM25 retriever.
func DefaultConfig() Config {
	return Config{
		DatasetName: "hotpotqa", TrainPath: DefaultTrainPath, MaxInstances: 20000,
		RetrievalServerURL: "http://127.0.0.1:8000", RetrievalTimeout: 30, MaxSearchResults: 5,
		MaxTotalChars: 4000, MaxSteps: 10, RenderMode: "text", CorrectReward: 1, IncorrectReward: 0,
		F1Threshold: 0.3, Retriever: "bm25",
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Retriever != "bm25" && c.Retriever != "server" {
		errs = append(errs, fmt.Errorf("search: retriever %q: want bm25 or server", c.Retriever))
	}
	if c.Retriever == "server" && !c.MockMode && !strings.HasPrefix(c.RetrievalServerURL, "http://") && !strings.HasPrefix(c.RetrievalServerURL, "https://") {
		errs = append(errs, fmt.Errorf("search: retrieval_server_url %q must be an http(s) URL", c.RetrievalServerURL))
	}
	if c.MaxSteps < 1 || c.MaxSearchResults < 1 || c.MaxTotalChars < 1 {
		errs = append(errs, errors.New("search: max_steps, max_search_results and max_total_chars must be >= 1"))
	}
	if c.MaxInstances < 0 {
		errs = append(errs, fmt.Errorf("search: max_instances %d: want >= 0 (0 = every row)", c.MaxInstances))
	}
	if c.RetrievalTimeout <= 0 {
		errs = append(errs, fmt.Errorf("search: retrieval_timeout %v must be positive", c.RetrievalTimeout))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("search: render_mode %q: only \"text\"", c.RenderMode))
	}
	return errors.Join(errs...)
}

// Question is one QA item.
type Question struct {
	Question    string
	GroundTruth []string
}

//go:embed data/corpus.jsonl
var corpusJSONL []byte

//go:embed data/questions.jsonl
var questionsJSONL []byte

var (
	builtinOnce sync.Once
	builtinIdx  *BM25
	builtinQs   []Question
	builtinErr  error
)

func builtin() (*BM25, []Question, error) {
	builtinOnce.Do(func() {
		docs, err := ReadCorpus(bytes.NewReader(corpusJSONL))
		if err != nil {
			builtinErr = err
			return
		}
		builtinIdx = NewBM25(docs)
		builtinQs, builtinErr = ReadQuestions(bytes.NewReader(questionsJSONL), 0)
	})
	return builtinIdx, builtinQs, builtinErr
}

// BuiltinQuestions returns the embedded question set.
func BuiltinQuestions() ([]Question, error) {
	_, qs, err := builtin()
	return qs, err
}

// truths reads a ground_truth value: a string is one ground truth, a list
// holds them (non-string items as Python's str() prints them).
func truths(raw json.RawMessage) ([]string, error) {
	v, err := pyjson.Decode(string(raw))
	if err != nil {
		return nil, fmt.Errorf("ground_truth: %w", err)
	}
	return truthsOf(v)
}

// truthsOf is a decoded ground_truth value as the ground truths scored: a
// string alone, or a list's items as Python's str() writes them.
func truthsOf(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, len(x))
		for i, g := range x {
			out[i] = pyStr(g)
		}
		return out, nil
	}
	return nil, fmt.Errorf("ground_truth must be a string or a list, not %s", pyjson.TypeName(v))
}

// ReadQuestions reads JSONL rows with "question" and "ground_truth"
// (string or list); limit > 0 keeps the first limit rows.
func ReadQuestions(r io.Reader, limit int) ([]Question, error) {
	var out []Question
	enough := errors.New("enough questions")
	err := env.ForEachLine(r, 64<<20, func(b []byte) error {
		if limit > 0 && len(out) >= limit {
			return enough
		}
		var row struct {
			Question    *string         `json:"question"`
			GroundTruth json.RawMessage `json:"ground_truth"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		if row.Question == nil {
			return errors.New(`missing "question"`)
		}
		gt, err := truths(row.GroundTruth)
		if err != nil {
			return err
		}
		out = append(out, Question{Question: *row.Question, GroundTruth: gt})
		return nil
	})
	if err != nil && !errors.Is(err, enough) {
		return nil, fmt.Errorf("search: %w", err)
	}
	return out, nil
}

// ReadParquetQuestions reads a parquet file with a question column of
// strings and a ground_truth column of strings or lists (of any values,
// scored as Python's str() writes them), as the JSONL reader reads them.
func ReadParquetQuestions(r io.Reader, limit int) ([]Question, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for _, c := range []string{"question", "ground_truth"} {
		if !slices.Contains(f.Columns(), c) {
			return nil, fmt.Errorf("search: parquet has no %s column (columns: %s)", c, strings.Join(f.Columns(), ", "))
		}
	}
	qs, err := f.ReadColumn("question", limit)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	gts, err := f.ReadValues("ground_truth", limit)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if limit > 0 && len(qs) > limit { // ReadColumn stops after a whole row group
		qs = qs[:limit]
	}
	if len(gts) < len(qs) {
		return nil, fmt.Errorf("search: parquet: ground_truth has %d rows, question %d", len(gts), len(qs))
	}
	out := make([]Question, 0, len(qs))
	for i := range qs {
		if qs[i].Null || len(qs[i].Strs) != 1 {
			return nil, fmt.Errorf("search: parquet row %d: question is not a string", i)
		}
		gt, err := truthsOf(pyjson.FromParquet(gts[i]))
		if err != nil {
			return nil, fmt.Errorf("search: parquet row %d: %w", i, err)
		}
		out = append(out, Question{Question: qs[i].Strs[0], GroundTruth: gt})
	}
	return out, nil
}

// LoadQuestions reads train_path (.parquet or JSONL), the first
// max_instances rows (all when 0). Upstream's default path with no file there gives the embedded set.
func LoadQuestions(cfg Config) ([]Question, error) {
	b, err := os.ReadFile(cfg.TrainPath)
	if errors.Is(err, os.ErrNotExist) && cfg.TrainPath == DefaultTrainPath {
		qs, err := BuiltinQuestions()
		if cfg.MaxInstances > 0 && len(qs) > cfg.MaxInstances {
			qs = qs[:cfg.MaxInstances]
		}
		return qs, err
	}
	if err != nil {
		return nil, fmt.Errorf("search: train_path: %w (give a .parquet or .jsonl file with question and ground_truth)", err)
	}
	var qs []Question
	if strings.EqualFold(filepath.Ext(cfg.TrainPath), ".parquet") || bytes.HasPrefix(b, []byte("PAR1")) {
		qs, err = ReadParquetQuestions(bytes.NewReader(b), cfg.MaxInstances)
	} else {
		qs, err = ReadQuestions(bytes.NewReader(b), cfg.MaxInstances)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, cfg.TrainPath)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("search: %s holds no questions", cfg.TrainPath)
	}
	return qs, nil
}

const actionsLine = "Available actions: search[<query>], finish[<answer>]"

// Env is the search-augmented question-answering environment.
type Env struct {
	cfg       Config
	questions []Question
	retriever Retriever
	url       string
	cur       Question
	steps     int
	render    string
	// HealthErr is the result of the start-up health check of the
	// retrieval server (upstream only warns).
	HealthErr error
}

var _ env.BaseEnv = (*Env)(nil)

func init() {
	env.RegisterPromptDefaults("search", env.PromptDefaults{})
	env.Register("search", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("search", DefaultConfig(), envConfig, func(c Config) (*Env, error) {
		c.IntValues = env.IntKeys(envConfig, "retrieval_timeout", "correct_reward", "incorrect_reward")
		return New(c)
	})
}

var (
	corporaMu sync.Mutex
	corpora   = map[string]*BM25{}
)

func corpusIndex(path string) (*BM25, error) {
	if path == "" {
		idx, _, err := builtin()
		return idx, err
	}
	corporaMu.Lock()
	defer corporaMu.Unlock()
	if idx, ok := corpora[path]; ok {
		return idx, nil
	}
	docs, err := LoadCorpus(path)
	if err != nil {
		return nil, err
	}
	idx := NewBM25(docs)
	corpora[path] = idx
	return idx, nil
}

// New builds the env: questions from train_path, retrieval from mock mode,
// the BM25 index or the server.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	qs, err := LoadQuestions(cfg)
	if err != nil {
		return nil, err
	}
	var r Retriever
	e := &Env{cfg: cfg, questions: qs, url: cfg.RetrievalServerURL}
	switch {
	case cfg.MockMode:
		r = Mock{}
	case cfg.Retriever == "server":
		sc := &ServerClient{URL: cfg.RetrievalServerURL, Timeout: time.Duration(cfg.RetrievalTimeout * float64(time.Second)),
			TimeoutIsInt: cfg.IntValues["retrieval_timeout"]}
		e.HealthErr = sc.Health(context.Background())
		r = sc
	default:
		if r, err = corpusIndex(cfg.CorpusPath); err != nil {
			return nil, err
		}
	}
	e.retriever = r
	e.setIndex(0)
	return e, nil
}

// NewWithRetriever builds the env over explicit questions and retriever.
func NewWithRetriever(cfg Config, qs []Question, r Retriever) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(qs) == 0 || r == nil {
		return nil, errors.New("search: no questions or no retriever")
	}
	e := &Env{cfg: cfg, questions: qs, retriever: r, url: cfg.RetrievalServerURL}
	e.setIndex(0)
	return e, nil
}

func (e *Env) setIndex(i int) {
	e.cur = e.questions[i]
	e.steps = 0
	e.render = "Question: " + e.cur.Question + "\n" + actionsLine
}

// Len is the number of questions.
func (e *Env) Len() int { return len(e.questions) }

// Current returns the current question.
func (e *Env) Current() Question { return e.cur }

// Reset picks question seed mod N.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	n := int64(len(e.questions))
	e.setIndex(int(((seed % n) + n) % n))
	return e.render, nil
}

// dispatch classifies a stripped action (service-envs.md §1): search[q]
// and finish[a] take everything between the verb's bracket and the last
// character, unstripped; "" is empty; anything else is a fallback answer.
func dispatch(a string) (kind, arg string) {
	switch {
	case strings.HasPrefix(a, "search[") && strings.HasSuffix(a, "]"):
		return "search", a[len("search[") : len(a)-1]
	case strings.HasPrefix(a, "finish[") && strings.HasSuffix(a, "]"):
		return "finish", a[len("finish[") : len(a)-1]
	case a == "":
		return "invalid", ""
	}
	return "fallback", a
}

// Step runs search[q], finish[a], or treats other text as an answer
// (service-envs.md §1). Every call counts toward max_steps. Info carries
// upstream's keys for the action kind: action_is_effective,
// action_is_valid, success, action_type ("search", "finish", "fallback"
// or "invalid"), and query; answer and reward_metadata; raw_action,
// extracted_answer and reward_metadata.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	e.steps++
	limit := e.steps >= e.cfg.MaxSteps
	act := pystr.Strip(a.Text)
	kind, arg := dispatch(act)
	res := env.StepResult{}
	switch kind {
	case "search":
		text, err := e.searchText(ctx, arg)
		if err != nil {
			return env.StepResult{}, err
		}
		tail := actionsLine
		if limit {
			tail = "Maximum search steps reached. Episode ended without an answer."
		}
		e.render = fmt.Sprintf("Search results for '%s':\n%s\n\n%s", arg, text, tail)
		res.Done = limit
		res.Info = env.Info{"action_is_effective": true, "action_is_valid": true, "success": false, "action_type": "search", "query": arg}
	case "finish":
		s := e.score(arg)
		e.render = fmt.Sprintf("Your answer: %s. Reward: %s", arg, pyFixed(s.Reward, 2))
		res.Reward, res.RewardIsInt, res.Done = s.Reward, e.rewardIsInt(s), true
		res.Info = env.Info{"action_is_effective": true, "action_is_valid": true, "success": s.ExactMatch || s.Reward > 0,
			"action_type": "finish", "answer": arg, "reward_metadata": s.Metadata()}
	case "fallback":
		x := ExtractAnswer(act)
		s := e.score(x)
		e.render = fmt.Sprintf("Your answer (extracted): %s. Reward: %s", x, pyFixed(s.Reward, 2))
		res.Reward, res.RewardIsInt, res.Done = s.Reward, e.rewardIsInt(s), true
		res.Info = env.Info{"action_is_effective": true, "action_is_valid": false, "success": s.ExactMatch || s.Reward > 0,
			"action_type": "fallback", "raw_action": act, "extracted_answer": x, "reward_metadata": s.Metadata()}
	default:
		e.render = "Invalid action. Use search[<query>] to search or finish[<answer>] to answer.\n" + actionsLine
		res.Done = limit
		res.Info = env.Info{"action_is_effective": false, "action_is_valid": false, "success": false, "action_type": "invalid"}
	}
	res.Observation = e.render
	return res, nil
}

// searchText is the result text of a search: the retriever's own text
// when it makes one (server, mock), else the formatted documents.
func (e *Env) searchText(ctx context.Context, q string) (string, error) {
	if s, ok := e.retriever.(Searcher); ok {
		return s.SearchText(ctx, q, e.cfg.MaxSearchResults, e.cfg.MaxTotalChars)
	}
	docs, err := e.retriever.Retrieve(ctx, q, e.cfg.MaxSearchResults)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "Search error: " + err.Error(), nil
	}
	return FormatResults(docs, e.cfg.MaxSearchResults, e.cfg.MaxTotalChars), nil
}

func (e *Env) score(ans string) Scoring {
	return ScoreAnswer(ans, e.cur.GroundTruth, e.cfg.CorrectReward, e.cfg.IncorrectReward, e.cfg.F1Threshold)
}

// rewardIsInt: the scored reward is correct_reward (exact match) or
// incorrect_reward given as a Python int; correct_reward * F1 is a float.
func (e *Env) rewardIsInt(s Scoring) bool {
	if s.ExactMatch {
		return e.cfg.IntValues["correct_reward"]
	}
	return s.F1Score < e.cfg.F1Threshold && e.cfg.IntValues["incorrect_reward"]
}

// Render returns the current observation.
func (e *Env) Render() string { return e.render }

// Close does nothing.
func (e *Env) Close() error { return nil }

// OracleActions answers the current question with its first ground truth
// (env.Oracle), for demonstrations and `ragen eval --policy oracle`.
func (e *Env) OracleActions(max int) ([]string, bool, error) {
	if max < 1 || len(e.cur.GroundTruth) == 0 {
		return nil, false, nil
	}
	return []string{"finish[" + e.cur.GroundTruth[0] + "]"}, true, nil
}
