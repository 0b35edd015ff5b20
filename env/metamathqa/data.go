package metamathqa

import (
	"bytes"
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

	"ragen/env"
	"ragen/env/countdown/parquet"
)

// Item is one MetaMathQA record (extra fields are ignored).
type Item struct {
	Query    string `json:"query"`
	Response string `json:"response"`
	Type     string `json:"type,omitempty"`
}

//go:embed data/gsm8k_test.jsonl
var gsm8kTest []byte

var (
	builtinOnce  sync.Once
	builtinItems []Item
	builtinErr   error
)

// Builtin returns the embedded dataset: GSM8K's 1,319 test problems in
// MetaMathQA shape (data/README.md). The slice is shared; do not modify it.
func Builtin() ([]Item, error) {
	builtinOnce.Do(func() {
		builtinItems, builtinErr = ReadJSONL(bytes.NewReader(gsm8kTest))
	})
	return builtinItems, builtinErr
}

// ReadJSONL reads one record per non-blank line.
func ReadJSONL(r io.Reader) ([]Item, error) {
	var items []Item
	err := env.ForEachLine(r, 64<<20, func(b []byte) error {
		it, err := decodeItem(b)
		items = append(items, it)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("metamathqa: %w", err)
	}
	return items, nil
}

type rawItem struct {
	Query    *string `json:"query"`
	Response *string `json:"response"`
	Type     string  `json:"type"`
}

func (r rawItem) item() (Item, error) {
	if r.Query == nil {
		return Item{}, errors.New(`missing string field "query"`)
	}
	if r.Response == nil {
		return Item{}, errors.New(`missing string field "response"`)
	}
	return Item{Query: *r.Query, Response: *r.Response, Type: r.Type}, nil
}

func decodeItem(b []byte) (Item, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var r rawItem
	if err := dec.Decode(&r); err != nil {
		return Item{}, err
	}
	if dec.More() {
		return Item{}, errors.New("trailing data after the object")
	}
	return r.item()
}

// ReadParquet reads the string columns "query" and "response" (required
// values) and "type" (optional) of a parquet file, e.g. a Hugging Face
// parquet export of MetaMathQA. See package parquet for what is supported.
func ReadParquet(r io.Reader) ([]Item, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("metamathqa: %w", err)
	}
	cols := map[string][]parquet.Cell{}
	for _, name := range []string{"query", "response", "type"} {
		if name == "type" && !slices.Contains(f.Columns(), name) {
			continue
		}
		c, err := f.ReadColumn(name, 0)
		if err != nil {
			return nil, fmt.Errorf("metamathqa: %w", err)
		}
		cols[name] = c
	}
	n := len(cols["query"])
	for name, c := range cols {
		if len(c) != n {
			return nil, fmt.Errorf("metamathqa: parquet column %s has %d rows, query has %d", name, len(c), n)
		}
	}
	str := func(name string, i int, required bool) (string, error) {
		c, ok := cols[name]
		if !ok {
			return "", nil
		}
		cell := c[i]
		if cell.Null || len(cell.Strs) != 1 {
			if required || len(cell.Ints) > 0 || len(cell.Floats) > 0 || len(cell.Strs) > 1 {
				return "", fmt.Errorf("metamathqa: parquet row %d: %s is null or not a string", i, name)
			}
			return "", nil
		}
		return cell.Strs[0], nil
	}
	items := make([]Item, n)
	for i := range items {
		if items[i].Query, err = str("query", i, true); err != nil {
			return nil, err
		}
		if items[i].Response, err = str("response", i, true); err != nil {
			return nil, err
		}
		if items[i].Type, err = str("type", i, false); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// ReadJSON reads a JSON array of records (the layout of MetaMathQA-395K.json).
func ReadJSON(r io.Reader) ([]Item, error) {
	var raws []rawItem
	if err := json.NewDecoder(r).Decode(&raws); err != nil {
		return nil, fmt.Errorf("metamathqa: %w", err)
	}
	items := make([]Item, len(raws))
	for i, raw := range raws {
		it, err := raw.item()
		if err != nil {
			return nil, fmt.Errorf("metamathqa: item %d: %w", i, err)
		}
		items[i] = it
	}
	return items, nil
}

// LoadFile reads a .parquet, .json (array) or .jsonl/.ndjson file; other
// extensions are sniffed from the first bytes.
func LoadFile(path string) ([]Item, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("metamathqa: %w", err)
	}
	var items []Item
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case ext == ".jsonl" || ext == ".ndjson":
		items, err = ReadJSONL(bytes.NewReader(b))
	case ext == ".json" || bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")):
		items, err = ReadJSON(bytes.NewReader(b))
	case ext == ".parquet" || bytes.HasPrefix(b, []byte("PAR1")):
		items, err = ReadParquet(bytes.NewReader(b))
	default:
		items, err = ReadJSONL(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return items, nil
}

// DefaultDatasetPath is upstream's Hugging Face dataset name.
const DefaultDatasetPath = "meta-math/MetaMathQA"

// BuiltinName selects the embedded GSM8K test set explicitly.
const BuiltinName = "gsm8k"

// Resolve finds the dataset for a config, in this order:
//  1. dataset_path is a file: read it;
//  2. dataset_path, or cache_dir/dataset_path, is a directory holding
//     {split}.jsonl, {split}.json, {split}.parquet or MetaMathQA-395K.json:
//     read that;
//  3. dataset_path is "gsm8k" or upstream's default "meta-math/MetaMathQA"
//     (with no local copy found above): the embedded GSM8K test set.
//
// Anything else is an error naming the places searched.
func Resolve(cfg Config) ([]Item, error) {
	p := cfg.DatasetPath
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return LoadFile(p)
	}
	dirs := []string{p}
	if cfg.CacheDir != "" && !filepath.IsAbs(p) {
		dirs = append(dirs, filepath.Join(cfg.CacheDir, p))
	}
	var tried []string
	for _, d := range dirs {
		for _, name := range []string{cfg.Split + ".jsonl", cfg.Split + ".json", cfg.Split + ".parquet", "MetaMathQA-395K.json"} {
			f := filepath.Join(d, name)
			tried = append(tried, f)
			if st, err := os.Stat(f); err == nil && !st.IsDir() {
				return LoadFile(f)
			}
		}
	}
	if p == BuiltinName || p == DefaultDatasetPath {
		return Builtin()
	}
	return nil, fmt.Errorf("metamathqa: dataset %q not found (tried %s); use a local JSON/JSONL file, or %q for the embedded GSM8K test set",
		p, strings.Join(append([]string{p}, tried...), ", "), BuiltinName)
}
