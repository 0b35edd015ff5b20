package countdown

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"ragen/env"
	"ragen/env/countdown/parquet"
)

// LoadTasks reads Countdown tasks from a parquet file (Jiayi-Pan/
// Countdown-Tasks-3to4 layout: an integer column "target" and a list
// column "nums"), a JSON Lines file (one {"target": …, "nums": […]} object
// a line) or a JSON array of such objects, chosen by the file's extension
// (.parquet, .jsonl/.ndjson, .json) or, failing that, its first bytes.
// At most maxInstances rows are read (≤ 0: all).
func LoadTasks(path string, maxInstances int) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("countdown: %w", err)
	}
	defer f.Close()
	ext := strings.ToLower(filepath.Ext(path))
	var tasks []Task
	switch {
	case ext == ".parquet":
		tasks, err = ReadParquetTasks(f, maxInstances)
	case ext == ".jsonl" || ext == ".ndjson":
		tasks, err = ReadJSONLTasks(f, maxInstances)
	case ext == ".json":
		tasks, err = ReadJSONTasks(f, maxInstances)
	default:
		var head [4]byte
		n, _ := io.ReadFull(f, head[:])
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			return nil, fmt.Errorf("countdown: %s: %w", path, serr)
		}
		t := bytes.TrimSpace(head[:n])
		switch {
		case string(head[:n]) == "PAR1":
			tasks, err = ReadParquetTasks(f, maxInstances)
		case len(t) > 0 && t[0] == '[':
			tasks, err = ReadJSONTasks(f, maxInstances)
		default:
			tasks, err = ReadJSONLTasks(f, maxInstances)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("countdown: %s: %w", path, err)
	}
	return tasks, nil
}

// rawTask accepts numbers as JSON numbers that must be integral.
type rawTask struct {
	Target *json.Number  `json:"target"`
	Nums   []json.Number `json:"nums"`
}

func jsonInt(n json.Number) (int, error) {
	if i, err := n.Int64(); err == nil {
		if i > math.MaxInt32 || i < math.MinInt32 {
			return 0, fmt.Errorf("%s out of range", n)
		}
		return int(i), nil
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not an integer", n)
	}
	return int(f), nil
}

func (r rawTask) task() (Task, error) {
	if r.Target == nil {
		return Task{}, errors.New(`missing "target"`)
	}
	if r.Nums == nil {
		return Task{}, errors.New(`missing "nums"`)
	}
	t, err := jsonInt(*r.Target)
	if err != nil {
		return Task{}, fmt.Errorf("target: %w", err)
	}
	nums := make([]int, len(r.Nums))
	for i, n := range r.Nums {
		if nums[i], err = jsonInt(n); err != nil {
			return Task{}, fmt.Errorf("nums[%d]: %w", i, err)
		}
	}
	return Task{Target: t, Nums: nums}, nil
}

// ReadJSONLTasks reads one task object per non-blank line.
func ReadJSONLTasks(r io.Reader, maxInstances int) ([]Task, error) {
	var tasks []Task
	enough := errors.New("enough tasks")
	err := env.ForEachLine(r, 16<<20, func(b []byte) error {
		if maxInstances > 0 && len(tasks) >= maxInstances {
			return enough
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var rt rawTask
		if err := dec.Decode(&rt); err != nil {
			return err
		}
		if dec.More() {
			return errors.New("trailing data after the object")
		}
		t, err := rt.task()
		tasks = append(tasks, t)
		return err
	})
	if err != nil && !errors.Is(err, enough) {
		return nil, err
	}
	return tasks, nil
}

// ReadJSONTasks reads a JSON array of task objects.
func ReadJSONTasks(r io.Reader, maxInstances int) ([]Task, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var raws []rawTask
	if err := dec.Decode(&raws); err != nil {
		return nil, err
	}
	if maxInstances > 0 && len(raws) > maxInstances {
		raws = raws[:maxInstances]
	}
	tasks := make([]Task, len(raws))
	for i, rt := range raws {
		t, err := rt.task()
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		tasks[i] = t
	}
	return tasks, nil
}

// ReadParquetTasks reads the "target" (integer) and "nums" (list of
// integers) columns of a parquet file, at most maxInstances rows (≤ 0: all).
// See package parquet for the layouts supported.
func ReadParquetTasks(r io.Reader, maxInstances int) ([]Task, error) {
	f, err := parquet.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if l, err := f.IsList("target"); err != nil || l {
		if err == nil {
			err = errors.New(`parquet: column "target" is a list, want an integer`)
		}
		return nil, err
	}
	if l, err := f.IsList("nums"); err != nil || !l {
		if err == nil {
			err = errors.New(`parquet: column "nums" is not a list`)
		}
		return nil, err
	}
	targets, err := f.ReadColumn("target", maxInstances)
	if err != nil {
		return nil, err
	}
	nums, err := f.ReadColumn("nums", maxInstances)
	if err != nil {
		return nil, err
	}
	if len(targets) != len(nums) {
		return nil, fmt.Errorf("parquet: %d targets but %d nums", len(targets), len(nums))
	}
	n := len(targets)
	if maxInstances > 0 && n > maxInstances {
		n = maxInstances
	}
	tasks := make([]Task, n)
	for i := range tasks {
		t, ns := targets[i], nums[i]
		switch {
		case t.Null || len(t.Ints) != 1:
			return nil, fmt.Errorf("parquet: row %d: target is null or not an integer", i)
		case ns.Null:
			return nil, fmt.Errorf("parquet: row %d: nums is null", i)
		case ns.NullElem:
			return nil, fmt.Errorf("parquet: row %d: nums has a null element", i)
		case len(ns.Strs) > 0 || len(ns.Floats) > 0:
			return nil, fmt.Errorf("parquet: row %d: nums is not a list of integers", i)
		}
		if tasks[i].Target, err = smallInt(t.Ints[0]); err != nil {
			return nil, fmt.Errorf("parquet: row %d: target %w", i, err)
		}
		tasks[i].Nums = make([]int, len(ns.Ints))
		for k, v := range ns.Ints {
			if tasks[i].Nums[k], err = smallInt(v); err != nil {
				return nil, fmt.Errorf("parquet: row %d: nums[%d] %w", i, k, err)
			}
		}
	}
	return tasks, nil
}

func smallInt(v int64) (int, error) {
	if v > math.MaxInt32 || v < math.MinInt32 {
		return 0, fmt.Errorf("%d out of range", v)
	}
	return int(v), nil
}

// FilterSolvable keeps the tasks upstream keeps: those some ± assignment of
// the (zero-padded, first four) numbers solves.
func FilterSolvable(tasks []Task) []Task {
	out := make([]Task, 0, len(tasks))
	for _, t := range tasks {
		if signSolvable(t) {
			out = append(out, t)
		}
	}
	return out
}
