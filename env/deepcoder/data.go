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
	"strconv"
	"strings"

	"ragen/env"
	"ragen/env/countdown/parquet"
	"ragen/env/internal/pyjson"
)

// TestCase is one test of a problem (upstream's ground_truth entries).
// Input is the stdin text (any other value is fed as Python's str() of
// it) or, for a functional test, a string of Python expressions, one per
// line, or a list of arguments; Output is the expected value.
type TestCase struct {
	Input    any    `json:"input"`
	Output   any    `json:"output"`
	TestType string `json:"testtype"` // "functional" makes a function call when the problem has a func_name; anything else is a stdin test
	Metadata any    `json:"metadata,omitempty"`

	noInput bool // the test had no "input" key
	inRaw   any  // Input as decoded, objects in document order (set by the loaders)
	hasRaw  bool
	inStr   string // py-str of Input in document order (set by the loaders)
	want    string // py-str of Output in document order (set by the loaders)
	hasWant bool
}

// Problem is one DeepCoder row.
type Problem struct {
	Question    string     // the prompt shown to the model
	Tests       []TestCase // parsed ground_truth
	StarterCode string
	FuncName    string // the row metadata's func_name ("" when absent or null)
	// Solution is a reference answer when the row has one ("solution", or
	// the first of "solutions"): the env's oracle. Upstream ignores it.
	Solution string

	// falsyPrompt: the prompt value was falsy but not "" (0, false, [],
	// null), which upstream's render tests as no prompt.
	falsyPrompt bool

	// testsErr and metaErr are upstream's QUIRK of ground truth or
	// metadata JSON text of the wrong kind: kept, and failing the step
	// that needs it (the metadata is read only when there are tests).
	testsErr, metaErr error
}

// plainValue turns a pyjson value into the plain Go values the sandbox job
// marshals (ints as int64, objects as maps).
func plainValue(v any) any {
	switch x := v.(type) {
	case pyjson.Int:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		return json.Number(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	case *pyjson.Object:
		out := make(map[string]any, len(x.Keys))
		for _, k := range x.Keys {
			out[k] = plainValue(x.Vals[k])
		}
		return out
	}
	return v
}

// row is one dataset row as Python sees it: values decoded in document
// order, strings for parquet columns.
type row struct {
	get  func(string) (any, bool)
	repr func() string
}

// problemOf reads a row as upstream's reset does (service-envs.md §2
// "Row reading"). Rows that carry the raw DeepCoder-Preview "tests"
// column and no "ground_truth" first get upstream's default preprocessing
// (envs.md §9): the tests are normalised and the prompt is the problem
// followed by the starter code, as upstream's fallback for rllm's
// LiveCodeBench prompt writes it.
func problemOf(r row) Problem {
	var p Problem
	gt, hasGT := r.get("ground_truth")
	tests, hasTests := r.get("tests")
	found := false
	for _, k := range []string{"question", "prompt", "problem"} {
		if v, ok := r.get(k); ok {
			if v != nil {
				p.Question = PyStr(v)
			}
			p.falsyPrompt = !pyjson.Truthy(v)
			found = true
			break
		}
	}
	if !found {
		p.Question = r.repr()
	}
	if v, ok := r.get("problem"); ok && hasTests && !hasGT {
		if s, _ := r.get("starter_code"); pyjson.Truthy(s) {
			p.Question, p.falsyPrompt = PyStr(v)+"\n\nStarter code:\n"+PyStr(s), false
		} else { // the problem itself
			p.Question, p.falsyPrompt = "", !pyjson.Truthy(v)
			if v != nil {
				p.Question = PyStr(v)
			}
		}
	}
	if v, ok := r.get("starter_code"); ok && pyjson.Truthy(v) {
		p.StarterCode = PyStr(v)
	}
	if v, ok := r.get("solution"); ok && pyjson.Truthy(v) {
		p.Solution = PyStr(v)
	} else if v, ok := r.get("solutions"); ok {
		if s, ok := v.(string); ok {
			v, _ = pyjson.Decode(s)
		}
		if l, ok := v.([]any); ok && len(l) > 0 {
			p.Solution = PyStr(l[0])
		}
	}
	// Metadata: a string is JSON-parsed (invalid → {}), an object used,
	// anything else {}. QUIRK: JSON that is not an object fails the step.
	var meta *pyjson.Object
	if v, ok := r.get("metadata"); ok {
		switch x := v.(type) {
		case string:
			d, err := pyjson.Decode(x)
			switch o := d.(type) {
			case *pyjson.Object:
				meta = o
			default:
				if err == nil && pyjson.Truthy(d) {
					p.metaErr = fmt.Errorf("metadata is a JSON %s, not an object", pyjson.TypeName(d))
				}
			}
		case *pyjson.Object:
			meta = x
		}
	}
	// Upstream tests the func_name's truthiness: 0 or false make stdin tests.
	if meta != nil {
		if fn, ok := meta.Get("func_name"); ok && pyjson.Truthy(fn) {
			p.FuncName = PyStr(fn)
		}
	}
	// Tests: item.get("ground_truth", item.get("tests", "[]")), so a
	// present ground_truth is used even when null or empty.
	var raw any = "[]"
	switch {
	case hasGT:
		raw = gt
	case hasTests:
		raw = preprocess(tests)
	}
	// JSON text is parsed (invalid: no tests); QUIRK: text that parses to
	// a truthy non-list fails the step. Any other non-list is no tests.
	if s, ok := raw.(string); ok {
		d, err := pyjson.Decode(s)
		if err != nil {
			d = []any{}
		}
		if _, ok := d.([]any); !ok && pyjson.Truthy(d) {
			p.testsErr = fmt.Errorf("ground truth is a JSON %s, not a list", pyjson.TypeName(d))
			return p
		}
		raw = d
	}
	list, ok := raw.([]any)
	if !ok {
		return p
	}
	for i, e := range list {
		o, ok := e.(*pyjson.Object)
		if !ok {
			if p.testsErr == nil {
				p.testsErr = fmt.Errorf("test %d is a JSON %s, not an object", i, pyjson.TypeName(e))
			}
			continue
		}
		var t TestCase
		if v, ok := o.Get("input"); ok {
			t.Input, t.inRaw, t.hasRaw, t.inStr = plainValue(v), v, true, PyStr(v)
		} else {
			t.noInput = true
		}
		out, _ := o.Get("output")
		t.Output, t.want, t.hasWant = plainValue(out), PyStr(out), true
		if tt, ok := o.Get("testtype"); ok {
			t.TestType, _ = tt.(string)
		}
		if md, ok := o.Get("metadata"); ok {
			t.Metadata = plainValue(md)
		}
		p.Tests = append(p.Tests, t)
	}
	return p
}

// preprocess is upstream's default preprocessing of a raw tests value:
// {inputs, outputs} becomes zipped stdin_stdout tests (the shorter list
// wins), another non-list becomes [it] (a falsy one []).
func preprocess(v any) any {
	if s, ok := v.(string); ok {
		d, err := pyjson.Decode(s)
		if err != nil {
			return []any{}
		}
		v = d
	}
	if o, ok := v.(*pyjson.Object); ok {
		ins, ok1 := o.Get("inputs")
		outs, ok2 := o.Get("outputs")
		il, okl1 := ins.([]any)
		ol, okl2 := outs.([]any)
		if ok1 && ok2 && okl1 && okl2 {
			tests := make([]any, 0, min(len(il), len(ol)))
			for i := 0; i < len(il) && i < len(ol); i++ {
				t := &pyjson.Object{Keys: []string{"input", "output", "testtype"},
					Vals: map[string]any{"input": il[i], "output": ol[i], "testtype": "stdin_stdout"}}
				tests = append(tests, t)
			}
			return tests
		}
	}
	if _, ok := v.([]any); ok {
		return v
	}
	if !pyjson.Truthy(v) {
		return []any{}
	}
	return []any{v}
}

// ReadJSONL reads one row per non-blank line (any JSON object; see
// problemOf for the columns read).
func ReadJSONL(r io.Reader) ([]Problem, error) {
	var out []Problem
	err := env.ForEachLine(r, 256<<20, func(b []byte) error {
		v, err := pyjson.Decode(string(b))
		if err != nil {
			return fmt.Errorf("row %d: %w", len(out), err)
		}
		o, ok := v.(*pyjson.Object)
		if !ok {
			return fmt.Errorf("row %d: a JSON %s, not an object", len(out), pyjson.TypeName(v))
		}
		out = append(out, problemOf(row{get: o.Get, repr: func() string { return pyjson.Repr(o) }}))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deepcoder: %w", err)
	}
	return out, nil
}

// ReadParquet reads a parquet file as upstream reads a row of a Hugging
// Face dataset: every column in file order (strings, numbers, booleans,
// structs as dicts in field order, lists of any of them), through the same
// row reading as JSONL. A column of a physical type the reader cannot
// decode (INT96) is left out of the row; such a question, prompt, problem,
// ground_truth, tests, starter_code, metadata or solution column is an
// error naming it.
func ReadParquet(r io.Reader) ([]Problem, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("deepcoder: %w", err)
	}
	type column struct {
		name string
		vals []any
	}
	known := []string{"question", "prompt", "problem", "ground_truth", "tests", "starter_code", "metadata", "solution"}
	var cols []column
	n := int(f.NumRows())
	for _, name := range f.Columns() {
		vals, err := f.ReadValues(name, 0)
		if errors.Is(err, parquet.ErrUnsupported) && !slices.Contains(known, name) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("deepcoder: %w", err)
		}
		if len(vals) != n {
			return nil, fmt.Errorf("deepcoder: parquet column %s has %d rows, the file %d", name, len(vals), n)
		}
		cols = append(cols, column{name, vals})
	}
	out := make([]Problem, 0, max(n, 0))
	for i := 0; i < n; i++ {
		o := &pyjson.Object{Vals: map[string]any{}}
		for _, c := range cols {
			o.Keys, o.Vals[c.name] = append(o.Keys, c.name), pyjson.FromParquet(c.vals[i])
		}
		out = append(out, problemOf(row{get: o.Get, repr: func() string { return pyjson.Repr(o) }}))
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

// loadRows is LoadFile refusing a file without rows: upstream's reset
// would then fail (randint(0, -1)); the fallback prompt is for
// dataset_path null only.
func loadRows(path string) ([]Problem, error) {
	ps, err := LoadFile(path)
	if err == nil && len(ps) == 0 {
		err = fmt.Errorf("deepcoder: dataset %s has no rows", path)
	}
	return ps, err
}

// Resolve finds the dataset of cfg: dataset_path as a file, or a directory
// (itself or under cache_dir) holding {split}.jsonl or {split}.parquet
// (an empty or null split: the first of train, validation, test there).
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
		return loadRows(p)
	}
	dirs := []string{p}
	if cacheDir != "" && !filepath.IsAbs(p) {
		dirs = append(dirs, filepath.Join(cacheDir, p))
	}
	// upstream: config.split or the dataset's first split (Hugging Face
	// orders train, validation, test)
	splits := []string{"train", "validation", "test"}
	if cfg.Split != nil && *cfg.Split != "" {
		splits = []string{*cfg.Split}
	}
	var tried []string
	for _, d := range dirs {
		for _, sp := range splits {
			for _, name := range []string{sp + ".jsonl", sp + ".parquet"} {
				f := filepath.Join(d, name)
				tried = append(tried, f)
				if st, err := os.Stat(f); err == nil && !st.IsDir() {
					return loadRows(f)
				}
			}
		}
	}
	return nil, fmt.Errorf("deepcoder: dataset_path %q not found (tried %s); give a local .jsonl or .parquet file with question, ground_truth, starter_code, metadata columns, or leave dataset_path null for the built-in add(a, b) prompt",
		p, strings.Join(append([]string{p}, tried...), ", "))
}
