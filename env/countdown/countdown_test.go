package countdown

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/env/envtest"
	"ragen/internal/pyrand"
)

// testdata/tasks.jsonl: five tasks. ± filter (numbers padded to four):
//
//	24 [4 6 1]: ±4±6±1 reaches at most 11 → dropped (needs ×).
//	10 [3 5 2]: 3+5+2 = 10 → kept.
//	98 [44 19 35]: 44+19+35 = 98 → kept.
//	7 [10 3 2 2]: 10−3+2−2 = 7 → kept.
//	36 [3 4 3]: at most 10 → dropped.
func jsonlEnv(t *testing.T) *Env {
	cfg := DefaultConfig()
	cfg.TrainPath = filepath.Join("testdata", "tasks.jsonl")
	e, err := New(cfg)
	require.NoError(t, err)
	return e
}

func TestLoadJSONLAndFilter(t *testing.T) {
	tasks, err := LoadTasks(filepath.Join("testdata", "tasks.jsonl"), 0)
	require.NoError(t, err)
	assert.Len(t, tasks, 5)
	kept := FilterSolvable(tasks)
	assert.Equal(t, []Task{{10, []int{3, 5, 2}}, {98, []int{44, 19, 35}}, {7, []int{10, 3, 2, 2}}}, kept)
	// max_instances applies before the filter: the first two rows leave one.
	tasks, err = LoadTasks(filepath.Join("testdata", "tasks.jsonl"), 2)
	require.NoError(t, err)
	assert.Len(t, FilterSolvable(tasks), 1)
	assert.Equal(t, 3, jsonlEnv(t).Tasks())
}

func TestReadJSONLErrors(t *testing.T) {
	for in, msg := range map[string]string{
		`{"target": 1}`:                     `line 1: missing "nums"`,
		`{"nums": [1]}`:                     `line 1: missing "target"`,
		"{\"target\": 1, \"nums\": [1]}\n{": "line 2:",
		`{"target": 1.5, "nums": [1]}`:      "target: 1.5 is not an integer",
		`{"target": 1, "nums": [1, "a"]}`:   "line 1:",
		`{"target": 1, "nums": [1]} {}`:     "line 1: trailing data",
	} {
		_, err := ReadJSONLTasks(strings.NewReader(in), 0)
		assert.ErrorContains(t, err, msg, in)
	}
	_, err := LoadTasks(filepath.Join("testdata", "missing.parquet"), 0)
	assert.ErrorContains(t, err, "missing.parquet")
}

func TestReadJSONArray(t *testing.T) {
	tasks, err := ReadJSONTasks(strings.NewReader(`[{"target": 3, "nums": [1, 2]}, {"target": 2.0, "nums": [2]}]`), 0)
	require.NoError(t, err)
	assert.Equal(t, []Task{{3, []int{1, 2}}, {2, []int{2}}}, tasks)
}

func TestResetIndexAndRender(t *testing.T) {
	e := jsonlEnv(t)
	ctx := context.Background()
	tests := []struct {
		seed int64
		obs  string
	}{
		{0, "Target: 10, nums: [3, 5, 2]"},
		{1, "Target: 98, nums: [44, 19, 35]"},
		{5, "Target: 7, nums: [10, 3, 2, 2]"},  // 5 mod 3 = 2
		{-1, "Target: 7, nums: [10, 3, 2, 2]"}, // Python: -1 % 3 = 2
		{-3, "Target: 10, nums: [3, 5, 2]"},
	}
	for _, tc := range tests {
		obs, err := e.Reset(ctx, tc.seed, env.ModeTrain)
		require.NoError(t, err)
		assert.Equal(t, tc.obs, obs, "seed %d", tc.seed)
		assert.Equal(t, tc.obs, e.Render())
	}
}

func TestStep(t *testing.T) {
	e := jsonlEnv(t)
	ctx := context.Background()
	tests := []struct {
		answer  string
		reward  float64
		isInt   bool
		obs     string
		eff     bool
		success bool
	}{
		{"3 + 5 + 2", 1, true, "Your answer get 1 points.", true, true},
		{"(3 * 5) - 2", 0.1, false, "Your answer get 0.1 points.", true, false},
		{"3 + 5", 0, true, "Your answer get 0 points.", false, false},
		{"import os", 0, true, "Your answer get 0 points.", false, false},
		{"__import__('os').system('3 5 2')", 0.1, false, "Your answer get 0.1 points.", true, false},
	}
	for _, tc := range tests {
		_, err := e.Reset(ctx, 0, env.ModeTrain)
		require.NoError(t, err)
		res, err := e.Step(ctx, env.Action{Text: tc.answer})
		require.NoError(t, err)
		assert.Equal(t, tc.reward, res.Reward, tc.answer)
		assert.Equal(t, tc.isInt, res.RewardIsInt, tc.answer)
		assert.True(t, res.Done)
		assert.Equal(t, tc.obs, res.Observation)
		assert.Equal(t, env.Info{"action_is_effective": tc.eff, "action_is_valid": true, "success": tc.success}, res.Info)
		assert.Equal(t, tc.obs, e.Render(), "render after a step is the step's feedback, as upstream")
	}
}

func TestNewFromTasks(t *testing.T) {
	e, err := NewFromTasks(DefaultConfig(), []Task{{5, []int{2, 3}}})
	require.NoError(t, err)
	e.SetTask(Task{Target: 24, Nums: []int{4, 6, 1}})
	res, err := e.Step(context.Background(), env.Action{Text: "4*6*1"})
	require.NoError(t, err)
	assert.Equal(t, 1.0, res.Reward)
	_, err = NewFromTasks(DefaultConfig(), []Task{{24, []int{4, 6, 1}}})
	assert.ErrorContains(t, err, "none of 1 tasks")
}

func TestSolveAndGenerate(t *testing.T) {
	tests := []struct {
		nums   []int
		target int
		ok     bool
	}{
		{[]int{4, 6, 1}, 24, true},
		{[]int{3, 3, 8, 8}, 24, true}, // 8 / (3 - 8/3)
		{[]int{1, 1, 1}, 100, false},
		{[]int{44, 19, 35}, 98, true},
		{[]int{2}, 2, true},
	}
	for _, tc := range tests {
		expr, ok := Solve(tc.nums, tc.target)
		require.Equal(t, tc.ok, ok, "%v → %d", tc.nums, tc.target)
		if !ok {
			continue
		}
		r, _ := Score(expr, Task{Target: tc.target, Nums: tc.nums})
		assert.Equal(t, 1.0, r, "%v → %d: %s", tc.nums, tc.target, expr)
	}
	for seed := int64(0); seed < 20; seed++ {
		task, err := GenerateTask(pyrand.NewRandom(seed))
		require.NoError(t, err)
		assert.True(t, len(task.Nums) == 3 || len(task.Nums) == 4)
		assert.True(t, task.Target >= 1 && task.Target <= 100)
		expr, ok := Solve(task.Nums, task.Target)
		require.True(t, ok, "%+v", task)
		r, _ := Score(expr, task)
		assert.Equal(t, 1.0, r, "%+v: %s", task, expr)
	}
}

func TestGenerateOption(t *testing.T) {
	e, err := env.New("countdown", map[string]any{"generate": true})
	require.NoError(t, err)
	a, err := e.Reset(context.Background(), 11, env.ModeTrain)
	require.NoError(t, err)
	b, err := e.Reset(context.Background(), 11, env.ModeVal)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.True(t, strings.HasPrefix(a, "Target: "), a)
	// Scripted draws: 3 numbers (Intn(2) = 0), 10, 20, 30 (Intn(99) = 9, 19, 29),
	// then the target index among the sorted reachable targets.
	task, err := GenerateTask(env.NewScripted(nil, []int{0, 9, 19, 29, 0}))
	require.NoError(t, err)
	assert.Equal(t, Task{Target: Reachable([]int{10, 20, 30}, 100)[0], Nums: []int{10, 20, 30}}, task)
	assert.Equal(t, 1, Reachable([]int{10, 20, 30}, 100)[0]) // (10 + 20) / 30
}

func TestRegistry(t *testing.T) {
	e, err := env.New("countdown", map[string]any{"train_path": filepath.Join("parquet", "testdata", "snappy_dict.parquet"), "max_instances": 100})
	require.NoError(t, err)
	assert.LessOrEqual(t, e.(*Env).Tasks(), 100)
	assert.Greater(t, e.(*Env).Tasks(), 30)
	_, err = env.New("countdown", map[string]any{"train_path": "nowhere/train.parquet"})
	assert.ErrorContains(t, err, "nowhere/train.parquet")
	_, err = env.New("countdown", map[string]any{"trainpath": "x"})
	assert.ErrorContains(t, err, `"train_path"`)
}

func TestConcurrentEnvs(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			e, err := New(Config{RenderMode: "text", Generate: true})
			if err != nil {
				t.Error(err)
				return
			}
			for s := 0; s < 10; s++ {
				if _, err := e.Reset(context.Background(), int64(g*10+s), env.ModeTrain); err != nil {
					t.Error(err)
					return
				}
				task := e.Task()
				expr, _ := Solve(task.Nums, task.Target)
				res, err := e.Step(context.Background(), env.Action{Text: expr})
				if err != nil || res.Reward != 1 {
					t.Errorf("%+v %q: %v %v", task, expr, res.Reward, err)
				}
			}
		}(g)
	}
	wg.Wait()
}

func FuzzReadJSONLTasks(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "tasks.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"target": 1e400, "nums": [1]}`))
	f.Add([]byte(`[{"target": 3, "nums": [1, 2]}, {"target": 2.0, "nums": [2]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tasks, err := ReadJSONLTasks(bytes.NewReader(b), 0)
		if err == nil {
			_ = FilterSolvable(tasks)
		}
		if tasks, err := ReadJSONTasks(bytes.NewReader(b), 3); err == nil && len(tasks) > 3 {
			t.Fatalf("max_instances 3 gave %d tasks", len(tasks))
		}
	})
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(New(Config{TrainPath: filepath.Join("parquet", "testdata", "snappy_dict.parquet"), MaxInstances: 20000, RenderMode: "text"})))
}

func BenchmarkStepRender(b *testing.B) {
	e, err := NewFromTasks(DefaultConfig(), []Task{{10, []int{3, 5, 2}}})
	require.NoError(b, err)
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.Step(ctx, env.Action{Text: "(3 * 5) - 2 - 3"}); err != nil {
			b.Fatal(err)
		}
		_ = e.Render()
	}
}

func FuzzReadParquetTasks(f *testing.F) {
	for _, name := range []string{"snappy_dict.parquet", "null_nums.parquet"} {
		b, err := os.ReadFile(filepath.Join("parquet", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tasks, err := ReadParquetTasks(bytes.NewReader(b), 0)
		if err == nil {
			_ = FilterSolvable(tasks)
		}
	})
}

// The parquet files of package parquet hold the 300 rows of
// parquet/testdata/parquet_tasks.json.
func TestLoadParquetTasks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("parquet", "testdata", "parquet_tasks.json"))
	require.NoError(t, err)
	want, err := ReadJSONTasks(bytes.NewReader(b), 0)
	require.NoError(t, err)
	for _, name := range []string{"snappy_dict.parquet", "plain_uncompressed.parquet", "gzip_dict.parquet", "snappy_v2.parquet"} {
		got, err := LoadTasks(filepath.Join("parquet", "testdata", name), 0)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
		got, err = LoadTasks(filepath.Join("parquet", "testdata", name), 130)
		require.NoError(t, err, name)
		assert.Equal(t, want[:130], got, name)
	}
	got, err := LoadTasks(filepath.Join("parquet", "testdata", "zstd.parquet"), 0)
	require.NoError(t, err)
	assert.Equal(t, want[:10], got)
	_, err = LoadTasks(filepath.Join("parquet", "testdata", "null_nums.parquet"), 0)
	assert.ErrorContains(t, err, "row 2: nums is null")
	got, err = LoadTasks(filepath.Join("parquet", "testdata", "null_nums.parquet"), 2)
	require.NoError(t, err)
	assert.Equal(t, []Task{{5, []int{2, 3}}, {7, []int{}}}, got)
}

// A nums column of strings or floats is an error naming the row, not a
// task with no numbers.
func TestParquetNumsNotIntegers(t *testing.T) {
	type strRow struct {
		Target int64    `parquet:"target"`
		Nums   []string `parquet:"nums,list"`
	}
	type floatRow struct {
		Target int64     `parquet:"target"`
		Nums   []float64 `parquet:"nums,list"`
	}
	var a, b bytes.Buffer
	wa := pq.NewGenericWriter[strRow](&a)
	_, err := wa.Write([]strRow{{Target: 5, Nums: []string{"2", "3"}}})
	require.NoError(t, err)
	require.NoError(t, wa.Close())
	wb := pq.NewGenericWriter[floatRow](&b)
	_, err = wb.Write([]floatRow{{Target: 5, Nums: []float64{2, 3}}})
	require.NoError(t, err)
	require.NoError(t, wb.Close())
	for _, buf := range []*bytes.Buffer{&a, &b} {
		_, err := ReadParquetTasks(buf, 0)
		assert.ErrorContains(t, err, "row 0: nums is not a list of integers")
	}
}
