package metamathqa

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
)

func TestExtractAnswer(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"2 + 3 = 5.\nThe answer is: 5", "5", true},
		{"The answer is:  2 x \n", "2 x", true},
		// The first marker wins; the rest of the text is kept.
		{"x The answer is: \\frac{1}{2} The answer is: 3", "\\frac{1}{2} The answer is: 3", true},
		{"The answer is:5", "", false},              // the marker includes the space
		{"The answer is: \u001f7\u001c", "7", true}, // Python's strip() removes U+001C–U+001F
		{"The result is 7.", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := ExtractAnswer(tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
	}
}

func TestCheckAnswer(t *testing.T) {
	tests := []struct {
		answer, ref    string
		hasRef         bool
		correct, valid bool
	}{
		{"5", "5", true, true, true},
		{" 5 ", "5", true, true, true},
		{"2X", "2 x", true, true, true},          // lowercase, whitespace removed
		{"1\u00a0000", "1000", true, true, true}, // NBSP is whitespace
		{"1\u001f000", "1000", true, true, true}, // so is U+001F in Python
		{"1,000", "1000", true, false, true},     // no other normalisation
		{"", "5", true, false, false},            // empty: invalid
		{" \t\n", "", true, false, false},        // whitespace only: invalid
		{"7", "", false, false, true},            // no reference: never correct
		{"", "", false, false, false},
	}
	for _, tc := range tests {
		c, v := CheckAnswer(tc.answer, tc.ref, tc.hasRef)
		assert.Equal(t, tc.correct, c, "%q vs %q", tc.answer, tc.ref)
		assert.Equal(t, tc.valid, v, "%q", tc.answer)
	}
}

func TestBuiltin(t *testing.T) {
	items, err := Builtin()
	require.NoError(t, err)
	require.Len(t, items, 1319)
	for i, it := range items {
		a, ok := ExtractAnswer(it.Response)
		require.True(t, ok, "item %d", i)
		require.NotEmpty(t, a, "item %d", i)
		require.NotContains(t, it.Response, "####", "item %d", i)
		require.NotContains(t, it.Response, "<<", "item %d", i)
	}
	assert.True(t, strings.HasPrefix(items[0].Query, "Janet’s ducks lay 16 eggs per day."))
	a, _ := ExtractAnswer(items[0].Response)
	assert.Equal(t, "18", a)
}

// Indices from CPython: random.seed(s); random.randint(0, 1318) gives
// 788, 275, 1309, 853 for s = 0, 1, 42, 12345; answers from the data.
func TestResetSeededMatchesCPython(t *testing.T) {
	e, err := New(DefaultConfig())
	require.NoError(t, err)
	tests := []struct {
		seed   int64
		prefix string
		answer string
	}{
		{0, "John is raising money for a school trip.", "100"},
		{1, "Sean is practicing for his role in a theater", "138"},
		{42, "The girls are trying to raise money for a carnival", "2280"},
		{12345, "There are 90 rooms at the KozyInn Motel.", "15"},
	}
	for _, tc := range tests {
		obs, err := e.Reset(context.Background(), tc.seed, env.ModeTrain)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(obs, tc.prefix), "seed %d: %q", tc.seed, obs)
		assert.Equal(t, obs, e.Render())
		a, ok := e.ReferenceAnswer()
		assert.True(t, ok)
		assert.Equal(t, tc.answer, a)
		assert.Equal(t, tc.answer, e.CorrectAnswer())
	}
}

func TestEpisode(t *testing.T) {
	items, err := ReadJSONL(strings.NewReader(`{"query": "What is 2 + 3?", "response": "The answer is: 5"}`))
	require.NoError(t, err)
	e, err := NewFromItems(DefaultConfig(), items, nil)
	require.NoError(t, err)
	obs, err := e.Reset(context.Background(), 9, env.ModeTrain)
	require.NoError(t, err)
	assert.Equal(t, "What is 2 + 3?", obs)
	steps := []struct {
		answer string
		reward float64
		done   bool
		obs    string
		valid  bool
	}{
		{"6", 0.0, false, "Incorrect. Please think again.", true},
		{"", 0.0, false, "Incorrect. Please think again.", false},
		{" 5", 0.25, true, "Correct!", true}, // third attempt: 1/2^2
	}
	for _, s := range steps {
		res, err := e.Step(context.Background(), env.Action{Text: s.answer})
		require.NoError(t, err)
		assert.Equal(t, s.reward, res.Reward, s.answer)
		assert.False(t, res.RewardIsInt)
		assert.Equal(t, s.done, res.Done, s.answer)
		assert.Equal(t, s.obs, res.Observation)
		assert.Equal(t, s.obs, e.Render())
		assert.Equal(t, env.Info{"action_is_valid": s.valid, "success": s.done}, res.Info)
	}
	// A reset starts the count again: first-try reward is 1.
	_, err = e.Reset(context.Background(), 9, env.ModeTrain)
	require.NoError(t, err)
	res, err := e.Step(context.Background(), env.Action{Text: "5"})
	require.NoError(t, err)
	assert.Equal(t, 1.0, res.Reward)
}

func TestNoMarkerNeverCorrect(t *testing.T) {
	e, err := NewFromItems(DefaultConfig(), []Item{{Query: "q", Response: "The result is 7."}}, nil)
	require.NoError(t, err)
	_, ok := e.ReferenceAnswer()
	assert.False(t, ok)
	assert.Equal(t, "", e.CorrectAnswer())
	res, err := e.Step(context.Background(), env.Action{Text: "7"})
	require.NoError(t, err)
	assert.Equal(t, 0.0, res.Reward)
	assert.False(t, res.Done)
}

func TestResolve(t *testing.T) {
	items, err := Resolve(Config{DatasetPath: filepath.Join("testdata", "small.jsonl"), Split: "train"})
	require.NoError(t, err)
	assert.Len(t, items, 3)
	items, err = Resolve(Config{DatasetPath: filepath.Join("testdata", "small.json"), Split: "train"})
	require.NoError(t, err)
	assert.Equal(t, []Item{{Query: "Q1", Response: "The answer is: 1"}, {Query: "Q2", Response: "x The answer is: \\frac{1}{2} The answer is: 3"}}, items)
	// A directory holding {split}.jsonl, directly or under cache_dir.
	items, err = Resolve(Config{DatasetPath: filepath.Join("testdata", "local"), Split: "train"})
	require.NoError(t, err)
	assert.Len(t, items, 3)
	items, err = Resolve(Config{DatasetPath: "local", CacheDir: "testdata", Split: "train"})
	require.NoError(t, err)
	assert.Len(t, items, 3)
	// Upstream's default name without a local copy: the embedded set.
	items, err = Resolve(Config{DatasetPath: DefaultDatasetPath, CacheDir: "testdata", Split: "train"})
	require.NoError(t, err)
	assert.Len(t, items, 1319)
	_, err = Resolve(Config{DatasetPath: "someone/else", CacheDir: "testdata", Split: "train"})
	assert.ErrorContains(t, err, `dataset "someone/else" not found`)
	_, err = Resolve(Config{DatasetPath: filepath.Join("testdata", "local"), Split: "test"})
	assert.ErrorContains(t, err, "not found")
}

func TestReadErrors(t *testing.T) {
	for in, msg := range map[string]string{
		`{"query": "q"}`:    `line 1: missing string field "response"`,
		`{"response": "r"}`: `line 1: missing string field "query"`,
		"{\"query\": \"q\", \"response\": \"r\"}\n[": "line 2:",
		`{"query": 1, "response": "r"}`:              "line 1:",
	} {
		_, err := ReadJSONL(strings.NewReader(in))
		assert.ErrorContains(t, err, msg, in)
	}
	_, err := ReadJSON(strings.NewReader(`[{"query": "q"}]`))
	assert.ErrorContains(t, err, `item 0: missing string field "response"`)
	_, err = NewFromItems(DefaultConfig(), nil, nil)
	assert.Error(t, err)
}

func TestRegistry(t *testing.T) {
	e, err := env.New("metamathqa", nil)
	require.NoError(t, err)
	assert.Equal(t, 1319, e.(*Env).Len())
	e, err = env.New("metamathqa", map[string]any{"dataset_path": filepath.Join("testdata", "small.jsonl")})
	require.NoError(t, err)
	assert.Equal(t, 3, e.(*Env).Len())
	_, err = env.New("metamathqa", map[string]any{"datasetpath": "x"})
	assert.ErrorContains(t, err, `"dataset_path"`)
}

func TestConcurrentEnvs(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			e, err := New(DefaultConfig())
			if err != nil {
				t.Error(err)
				return
			}
			for s := 0; s < 50; s++ {
				if _, err := e.Reset(context.Background(), int64(g*50+s), env.ModeTrain); err != nil {
					t.Error(err)
					return
				}
				a := e.CorrectAnswer()
				res, err := e.Step(context.Background(), env.Action{Text: a})
				if err != nil || res.Reward != 1 {
					t.Errorf("seed %d: %v %v", g*50+s, res.Reward, err)
				}
			}
		}(g)
	}
	wg.Wait()
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"query": "What is 2 + 3?", "response": "The answer is: 5"}`))
	f.Add([]byte("{\"query\": \"q\", \"response\": \"r\"}\n\n{}"))
	f.Add([]byte(`[{"query": "Q1", "response": "The answer is: 1"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if items, err := ReadJSON(bytes.NewReader(b)); err == nil {
			for _, it := range items {
				_, _ = ExtractAnswer(it.Response)
			}
		}
		items, err := ReadJSONL(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, it := range items {
			_, _ = ExtractAnswer(it.Response)
		}
	})
}

func FuzzCheckAnswer(f *testing.F) {
	f.Add("5", "The answer is: 5")
	f.Add(" 2 X", "The answer is:  2x")
	f.Fuzz(func(t *testing.T, answer, response string) {
		ref, ok := ExtractAnswer(response)
		correct, valid := CheckAnswer(answer, ref, ok)
		if correct && !valid {
			t.Fatalf("correct but invalid: %q vs %q", answer, ref)
		}
		if n := Normalize(answer); Normalize(n) != n {
			t.Fatalf("Normalize not idempotent on %q", answer)
		}
		if ok && ref != "" {
			c, _ := CheckAnswer(ref, ref, true)
			if !c {
				t.Fatalf("reference %q does not match itself", ref)
			}
		}
	})
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(New(DefaultConfig())))
}

func BenchmarkStepRender(b *testing.B) {
	e, err := New(DefaultConfig())
	require.NoError(b, err)
	ctx := context.Background()
	_, err = e.Reset(ctx, 0, env.ModeTrain)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := e.Step(ctx, env.Action{Text: " 42 "}); err != nil {
			b.Fatal(err)
		}
		_ = e.Render()
	}
}

// The rollout manager reads the reference through this method set
// (ragen.CorrectAnswerer).
var _ interface{ CorrectAnswer() string } = (*Env)(nil)

// testdata/mmqa_*.parquet were written by testdata/gen_mmqa.js with
// parquet-wasm (arrow-rs) from testdata/mmqa_rows.jsonl (string columns;
// one row has no type).
func TestReadParquet(t *testing.T) {
	want, err := LoadFile(filepath.Join("testdata", "mmqa_rows.jsonl"))
	require.NoError(t, err)
	require.Len(t, want, 153)
	assert.Equal(t, "", want[152].Type)
	for _, name := range []string{"mmqa_snappy_dict.parquet", "mmqa_plain.parquet", "mmqa_v2_gzip.parquet"} {
		got, err := LoadFile(filepath.Join("testdata", name))
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	_, err = LoadFile(filepath.Join("testdata", "mmqa_null_response.parquet"))
	assert.ErrorContains(t, err, "parquet row 1: response is null")
	e, err := env.New("metamathqa", map[string]any{"dataset_path": filepath.Join("testdata", "mmqa_snappy_dict.parquet")})
	require.NoError(t, err)
	assert.Equal(t, 153, e.(*Env).Len())
}

func FuzzReadParquet(f *testing.F) {
	for _, name := range []string{"mmqa_snappy_dict.parquet", "mmqa_null_response.parquet"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ReadParquet(bytes.NewReader(b))
	})
}

// An optional type column that holds numbers is an error, as a number in
// a JSON row's "type" is; only a null type reads as "".
func TestParquetTypeNotString(t *testing.T) {
	type row struct {
		Query    string   `parquet:"query"`
		Response string   `parquet:"response"`
		Type     *float64 `parquet:"type,optional"`
	}
	x := 1.5
	for _, rows := range [][]row{{{Query: "q", Response: "r", Type: &x}}, {{Query: "q", Response: "r"}}} {
		var buf bytes.Buffer
		w := pq.NewGenericWriter[row](&buf)
		_, err := w.Write(rows)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		items, err := ReadParquet(&buf)
		if rows[0].Type != nil {
			assert.ErrorContains(t, err, "parquet row 0: type is null or not a string")
		} else {
			require.NoError(t, err)
			assert.Equal(t, "", items[0].Type)
		}
	}
}
