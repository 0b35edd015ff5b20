package deepcoder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"ragen/env"
	"ragen/env/countdown/parquet"
)

// TestCase is one test of a problem (upstream's ground_truth entries).
// Input is a string (stdin text, or one Python literal per line for a
// functional test) or a JSON list of arguments; Output is the expected
// stdout (stdin tests) or the value whose str() the call must print
// (functional tests).
type TestCase struct {
	Input    any    `json:"input"`
	Output   any    `json:"output"`
	TestType string `json:"testtype"` // "stdin" or "functional"
	Metadata any    `json:"metadata,omitempty"`
}

// Problem is one preprocessed DeepCoder row.
type Problem struct {
	Question    string     // the prompt shown to the model
	Tests       []TestCase // parsed ground_truth
	StarterCode string
	FuncName    string // from metadata's func_name ("" for stdin problems)
	// Solution is a reference answer when the row has one ("solution", or
	// the first of "solutions"): the env's oracle. Upstream ignores it.
	Solution string
}

// rawRow holds the columns a row may have: upstream's preprocessed fields
// (question, ground_truth, starter_code, metadata) or the raw
// DeepCoder-Preview ones (problem, tests).
type rawRow struct {
	Question    *string         `json:"question"`
	Problem     *string         `json:"problem"`
	GroundTruth json.RawMessage `json:"ground_truth"`
	Tests       json.RawMessage `json:"tests"`
	StarterCode string          `json:"starter_code"`
	Metadata    json.RawMessage `json:"metadata"`
	Solution    string          `json:"solution"`
	Solutions   json.RawMessage `json:"solutions"`
}

func (r rawRow) problem() (Problem, error) {
	p := Problem{StarterCode: r.StarterCode, Solution: r.Solution}
	if p.Solution == "" && len(r.Solutions) > 0 {
		raw, err := unstring(r.Solutions)
		var sols []string
		if err == nil && len(raw) > 0 && json.Unmarshal(raw, &sols) == nil && len(sols) > 0 {
			p.Solution = sols[0]
		}
	}
	switch {
	case r.Question != nil:
		p.Question = *r.Question
	case r.Problem != nil:
		p.Question = *r.Problem
		if r.StarterCode != "" {
			p.Question += "\n\nStarter code:\n" + r.StarterCode
		}
	default:
		return p, errors.New(`missing "question" (or "problem")`)
	}
	gt := r.GroundTruth
	if len(gt) == 0 || string(gt) == "null" {
		gt = r.Tests
	}
	tests, err := parseTests(gt)
	if err != nil {
		return p, fmt.Errorf("ground_truth: %w", err)
	}
	p.Tests = tests
	if p.FuncName, err = funcName(r.Metadata); err != nil {
		return p, fmt.Errorf("metadata: %w", err)
	}
	for i, t := range p.Tests {
		if t.TestType == "functional" && p.FuncName == "" {
			return p, fmt.Errorf("test %d is functional but metadata has no func_name", i)
		}
	}
	return p, nil
}

// unstring unwraps a JSON value stored as a JSON string (parquet and
// Hugging Face rows keep ground_truth and metadata as JSON text).
func unstring(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return json.RawMessage(strings.TrimSpace(s)), nil
	}
	return raw, nil
}

func parseTests(raw json.RawMessage) ([]TestCase, error) {
	raw, err := unstring(raw)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := func(b []byte, v any) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		return d.Decode(v)
	}
	if raw[0] == '{' {
		// {inputs: [...], outputs: [...]} expands to stdin tests.
		var io struct {
			Inputs  []any `json:"inputs"`
			Outputs []any `json:"outputs"`
		}
		if err := dec(raw, &io); err != nil {
			return nil, err
		}
		if len(io.Inputs) != len(io.Outputs) {
			return nil, fmt.Errorf("%d inputs but %d outputs", len(io.Inputs), len(io.Outputs))
		}
		out := make([]TestCase, len(io.Inputs))
		for i := range out {
			out[i] = TestCase{Input: io.Inputs[i], Output: io.Outputs[i], TestType: "stdin"}
		}
		return out, checkTests(out)
	}
	var out []TestCase
	if err := dec(raw, &out); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].TestType == "" {
			out[i].TestType = "stdin"
		}
	}
	return out, checkTests(out)
}

func checkTests(ts []TestCase) error {
	for i, t := range ts {
		switch t.TestType {
		case "stdin":
			if _, ok := t.Input.(string); !ok {
				return fmt.Errorf("test %d: stdin input must be a string, got %T", i, t.Input)
			}
		case "functional":
			switch t.Input.(type) {
			case string, []any:
			default:
				return fmt.Errorf("test %d: functional input must be a string or a list, got %T", i, t.Input)
			}
		default:
			return fmt.Errorf("test %d: unknown testtype %q (want stdin or functional)", i, t.TestType)
		}
	}
	return nil
}

func funcName(raw json.RawMessage) (string, error) {
	raw, err := unstring(raw)
	if err != nil || len(raw) == 0 || string(raw) == "null" {
		return "", err
	}
	var m struct {
		FuncName string `json:"func_name"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", err
	}
	return m.FuncName, nil
}

// ReadJSONL reads one row per non-blank line.
func ReadJSONL(r io.Reader) ([]Problem, error) {
	var out []Problem
	err := env.ForEachLine(r, 256<<20, func(b []byte) error {
		var row rawRow
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		p, err := row.problem()
		out = append(out, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("deepcoder: %w", err)
	}
	return out, nil
}

// ReadParquet reads a parquet file with string columns question (or
// problem), ground_truth (or tests), and optional starter_code and
// metadata.
func ReadParquet(r io.Reader) ([]Problem, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("deepcoder: %w", err)
	}
	have := f.Columns()
	pick := func(names ...string) string {
		for _, n := range names {
			if slices.Contains(have, n) {
				return n
			}
		}
		return ""
	}
	cols := map[string][]parquet.Cell{}
	roles := map[string]string{
		"question": pick("question", "problem"), "ground_truth": pick("ground_truth", "tests"),
		"starter_code": pick("starter_code"), "metadata": pick("metadata"),
	}
	if roles["question"] == "" {
		return nil, fmt.Errorf("deepcoder: parquet has no question or problem column (columns: %s)", strings.Join(have, ", "))
	}
	n := -1
	for role, name := range roles {
		if name == "" {
			continue
		}
		c, err := f.ReadColumn(name, 0)
		if err != nil {
			return nil, fmt.Errorf("deepcoder: %w", err)
		}
		if n >= 0 && len(c) != n {
			return nil, fmt.Errorf("deepcoder: parquet column %s has %d rows, others %d", name, len(c), n)
		}
		n = len(c)
		cols[role] = c
	}
	out := make([]Problem, 0, n)
	for i := 0; i < n; i++ {
		get := func(role string) (*string, error) {
			c, ok := cols[role]
			if !ok || c[i].Null {
				return nil, nil
			}
			if len(c[i].Strs) != 1 {
				return nil, fmt.Errorf("deepcoder: parquet row %d: %s is not a string", i, roles[role])
			}
			return &c[i].Strs[0], nil
		}
		var row rawRow
		q, err := get("question")
		if err != nil {
			return nil, err
		}
		if roles["question"] == "question" {
			row.Question = q
		} else {
			row.Problem = q
		}
		if gt, err := get("ground_truth"); err != nil {
			return nil, err
		} else if gt != nil {
			b, _ := json.Marshal(*gt)
			row.GroundTruth = b
		}
		if sc, err := get("starter_code"); err != nil {
			return nil, err
		} else if sc != nil {
			row.StarterCode = *sc
		}
		if md, err := get("metadata"); err != nil {
			return nil, err
		} else if md != nil {
			b, _ := json.Marshal(*md)
			row.Metadata = b
		}
		p, err := row.problem()
		if err != nil {
			return nil, fmt.Errorf("deepcoder: parquet row %d: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// LoadFile reads a .parquet or .jsonl file (others are sniffed).
func LoadFile(path string) ([]Problem, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("deepcoder: %w", err)
	}
	var ps []Problem
	if strings.EqualFold(filepath.Ext(path), ".parquet") || bytes.HasPrefix(b, []byte("PAR1")) {
		ps, err = ReadParquet(bytes.NewReader(b))
	} else {
		ps, err = ReadJSONL(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return ps, nil
}

// Resolve finds the dataset of cfg: dataset_path as a file, or a directory
// (itself or under cache_dir) holding {split}.jsonl or {split}.parquet.
// An empty dataset_path (upstream's None, which downloads DeepCoder-Preview)
// yields (nil, nil): the env then falls back to upstream's built-in
// add(a, b) prompt with no tests. A dataset_path that is not found is an
// error naming the places searched.
func Resolve(cfg Config) ([]Problem, error) {
	if cfg.DatasetPath == nil || *cfg.DatasetPath == "" {
		return nil, nil
	}
	p, cacheDir := *cfg.DatasetPath, ""
	if cfg.CacheDir != nil {
		cacheDir = *cfg.CacheDir
	}
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return LoadFile(p)
	}
	dirs := []string{p}
	if cacheDir != "" && !filepath.IsAbs(p) {
		dirs = append(dirs, filepath.Join(cacheDir, p))
	}
	var tried []string
	for _, d := range dirs {
		for _, name := range []string{cfg.Split + ".jsonl", cfg.Split + ".parquet"} {
			f := filepath.Join(d, name)
			tried = append(tried, f)
			if st, err := os.Stat(f); err == nil && !st.IsDir() {
				return LoadFile(f)
			}
		}
	}
	return nil, fmt.Errorf("deepcoder: dataset_path %q not found (tried %s); give a local .jsonl or .parquet file with question, ground_truth, starter_code, metadata columns, or leave dataset_path null for the built-in add(a, b) prompt",
		p, strings.Join(append([]string{p}, tried...), ", "))
}
