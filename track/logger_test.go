package track

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNewBackends(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("VERL_FILE_LOGGER_PATH", "")
	t.Setenv("VERL_FILE_LOGGER_ROOT", "")
	t.Setenv("TENSORBOARD_DIR", "")
	var out bytes.Buffer
	now, _ := fakeClock()
	l, err := New([]string{"console", "file", "jsonl", "tensorboard", "Console"}, Options{
		Project: "ragen", Experiment: "sokoban", Dir: dir, Out: &out, Mode: ModePlain,
		TotalSteps: 2, Now: now, Host: "h",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Log(1, map[string]float64{"critic/score/mean": 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := l.Log(-1, nil); err == nil {
		t.Error("negative step accepted")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := l.Log(2, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Log after Close: %v", err)
	}
	// veRL's layouts: <root>/<project>/<experiment>.jsonl and
	// tensorboard_log/<project>/<experiment>/events.out.tfevents.*.
	recs, err := ReadJSONL(filepath.Join(dir, "ragen", "sokoban.jsonl"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("jsonl: %v %v", recs, err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "tensorboard_log", "ragen", "sokoban", "events.out.tfevents.*.h"))
	if len(m) != 1 {
		t.Errorf("event files: %v", m)
	}
	// Duplicates ("console" twice) print once.
	if n := strings.Count(out.String(), "step:1 - critic/score/mean:0.5\n"); n != 1 {
		t.Errorf("console line printed %d times:\n%s", n, out.String())
	}
}

func TestNewEnvPaths(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("VERL_FILE_LOGGER_PATH", filepath.Join(dir, "x", "m.jsonl"))
	t.Setenv("TENSORBOARD_DIR", filepath.Join(dir, "tb"))
	l, err := New([]string{"file", "tensorboard"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, "x", "m.jsonl")); err != nil {
		t.Error(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "tb", "events.out.tfevents.*")); len(m) != 1 {
		t.Errorf("event files %v", m)
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		backends []string
		want     []string
	}{
		{[]string{"console", "wandb"}, []string{`"wandb" is not available offline`, "valid backends: console, file, jsonl, tensorboard"}},
		{[]string{"swanlab"}, []string{`"swanlab" is not available offline`}},
		{[]string{"tensorbord", "mlflow"}, []string{`unknown logger backend "tensorbord"`, `"mlflow" is not available offline`}},
	}
	for _, c := range cases {
		_, err := New(c.backends, Options{Out: &bytes.Buffer{}})
		if err == nil {
			t.Errorf("%v: no error", c.backends)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", c.backends, err, w)
			}
		}
	}
	// A failing file backend closes what was opened and reports the path problem.
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	if _, err := New([]string{"console", "jsonl"}, Options{JSONLPath: filepath.Join(f, "m.jsonl"), Out: &bytes.Buffer{}}); err == nil {
		t.Error("jsonl under a regular file accepted")
	}
}

type recorder struct {
	steps  []int
	err    error
	closed int
}

func (r *recorder) Log(step int, m map[string]float64) error {
	r.steps = append(r.steps, step)
	return r.err
}
func (r *recorder) Close() error { r.closed++; return r.err }

func TestMulti(t *testing.T) {
	a, b := &recorder{}, &recorder{err: errors.New("disk full")}
	l := Multi(a, nil, b)
	err := l.Log(3, nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
	// A failing backend does not stop the others.
	if len(a.steps) != 1 || len(b.steps) != 1 {
		t.Errorf("a %v b %v", a.steps, b.steps)
	}
	l.Close()
	l.Close()
	if a.closed != 1 || b.closed != 1 {
		t.Errorf("closed a %d b %d", a.closed, b.closed)
	}
	if err := Multi().Log(1, nil); err != nil {
		t.Errorf("empty Multi: %v", err)
	}
}

func TestHeadlineFields(t *testing.T) {
	m := map[string]float64{
		"critic/score/mean":            2,
		"train/A/success":              0.5,
		"train/B/success":              1,
		"train/B/non-zero/success":     7, // '*' does not cross '/'
		"val-env/A/success":            9,
		"collapse_trajectory_sample/x": math.NaN(),
	}
	got := HeadlineFields(DefaultHeadlines, m)
	// reward = 2; success = (0.5+1)/2 = 0.75; entropy absent.
	want := []Field{{"reward", 2}, {"success", 0.75}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestConsoleNoBar(t *testing.T) {
	var buf bytes.Buffer
	c := NewConsole(Options{Out: &buf, NoBar: true})
	c.Log(1, map[string]float64{"a": 1})
	c.Close()
	if got := buf.String(); got != "step:1 - a:1.0\n" {
		t.Errorf("got %q", got)
	}
	if err := c.Log(2, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Log after Close: %v", err)
	}
}

func TestLoggerNames(t *testing.T) {
	names := LoggerNames()
	for _, b := range ValidBackends {
		if !slices.Contains(names, b) {
			t.Errorf("LoggerNames lacks backend %q", b)
		}
	}
	// The other names are upstream's remote backends: New refuses them offline.
	for _, n := range names {
		if slices.Contains(ValidBackends, n) {
			continue
		}
		if _, err := New([]string{n}, Options{}); err == nil || !strings.Contains(err.Error(), "not available offline") {
			t.Errorf("New(%q) = %v, want the offline error", n, err)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("LoggerNames not sorted: %v", names)
	}
}
