package track

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fakeClock returns a clock and a function that advances it.
func fakeClock() (func() time.Time, func(time.Duration)) {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { return t }, func(d time.Duration) { t = t.Add(d) }
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestConsolePlainGolden renders three training steps of a 5-step run in
// plain (non-TTY) mode, 2.5 s per step.
func TestConsolePlainGolden(t *testing.T) {
	now, advance := fakeClock()
	var buf bytes.Buffer
	c := NewConsole(Options{Out: &buf, Mode: ModePlain, TotalSteps: 5, Now: now})
	steps := []map[string]float64{
		{"critic/score/mean": 0.5, "train/A/success": 0.25, "train/B/success": 0.75, "actor/entropy": 1.5, "timing_s/step": 2.5},
		{"critic/score/mean": 0.625, "train/A/success": 0.5, "actor/entropy": 1.25},
		{"actor/pg_loss": -0.125},
	}
	for i, m := range steps {
		advance(2500 * time.Millisecond)
		if err := c.Log(i+1, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Hand check of line 2: 1/5 = 20% -> 4 of 20 cells; elapsed 2.5 s ->
	// "00:02"; 2.5 s/step -> remaining 4*2.5 = 10 s -> "00:10"; success is
	// the mean of A and B, (0.25+0.75)/2 = 0.5.
	lines := strings.Split(buf.String(), "\n")
	want := "Training Progress:  20%|####                | 1/5 [00:02<00:10,  2.50s/step, reward=0.5, success=0.5, entropy=1.5]"
	if lines[1] != want {
		t.Errorf("line 2:\ngot  %q\nwant %q", lines[1], want)
	}
	golden(t, "console_plain.golden", buf.Bytes())
}

func TestProgressTTY(t *testing.T) {
	now, advance := fakeClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, "eval", ProgressOptions{Total: 8, Mode: ModeTTY, Width: 8, Now: now})
	advance(time.Second)
	p.Set(3)
	p.Println("hello")
	advance(time.Second)
	p.Add(5)
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	// 3/8 of 8 cells = 3 full cells; 1 s for 3 items -> 3.00it/s;
	// remaining 5 items at 1/3 s -> 1.67 s -> "00:01".
	bar1 := "eval:  38%|███     | 3/8 [00:01<00:01,  3.00it/s]"
	bar2 := "eval: 100%|████████| 8/8 [00:02<00:00,  4.00it/s]"
	want := "\r" + bar1 + "\x1b[K" + // first draw
		"\r\x1b[K" + "hello\n" + bar1 + // line above the bar, bar redrawn
		"\r" + bar2 + "\x1b[K" + // Add
		"\r" + bar2 + "\x1b[K" + "\n" // Finish redraws and ends the line
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestProgressPlainThrottle(t *testing.T) {
	now, advance := fakeClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, "sft", ProgressOptions{Total: 100, Mode: ModePlain, MinInterval: 10 * time.Second, Now: now})
	for i := 1; i <= 100; i++ {
		advance(time.Second)
		p.Set(i, Field{"loss", 1 / float64(i)})
	}
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	// Prints at steps 1, 11, 21, ..., 91 (every 10 s) and 100 (complete).
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 11 {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	if want := "sft: 100%|####################| 100/100 [01:40<00:00,  1.00it/s, loss=0.01]"; lines[10] != want {
		t.Errorf("last line %q, want %q", lines[10], want)
	}
}

func TestProgressUnknownTotal(t *testing.T) {
	now, advance := fakeClock()
	p := NewProgress(&bytes.Buffer{}, "", ProgressOptions{Mode: ModePlain, Unit: "ep", Now: now})
	if got, want := p.String(), "0ep [00:00, ?ep/s]"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	advance(2 * time.Second)
	p.Add(4)
	if got, want := p.String(), "4ep [00:02,  2.00ep/s]"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestProgressResumeRate(t *testing.T) {
	// A run resumed at step 40 of 100: rate counts only the 10 new steps.
	now, advance := fakeClock()
	p := NewProgress(&bytes.Buffer{}, "T", ProgressOptions{Total: 100, Initial: 40, Unit: "step", Mode: ModePlain, Width: 10, Now: now})
	advance(30 * time.Second)
	p.Set(50)
	// 3 s/step, 50 left -> 150 s = 02:30; 50% -> 5 of 10 cells.
	if got, want := p.String(), "T:  50%|#####     | 50/100 [00:30<02:30,  3.00s/step]"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is not a terminal")
	}
}

func BenchmarkProgressRender(b *testing.B) {
	p := NewProgress(&bytes.Buffer{}, "Training Progress", ProgressOptions{Total: 1000, Mode: ModePlain})
	p.Set(10, Field{"reward", 0.5}, Field{"success", 0.25})
	for b.Loop() {
		_ = p.String()
	}
}

func TestConsoleTTY(t *testing.T) {
	now, advance := fakeClock()
	var buf bytes.Buffer
	c := NewConsole(Options{Out: &buf, Mode: ModeTTY, TotalSteps: 2, Now: now, Title: "T"})
	advance(time.Second)
	c.Log(1, map[string]float64{"critic/score/mean": 1})
	advance(time.Second)
	c.Log(2, map[string]float64{"critic/score/mean": 2})
	c.Close()
	// Exactly 1 s/step: tqdm inverts the rate only above 1 s, so "1.00step/s".
	bar1 := "T:  50%|██████████          | 1/2 [00:01<00:01,  1.00step/s, reward=1]"
	// Redrawn at t = 2 s before the update: still 1 step, now 2 s/step.
	bar1b := "T:  50%|██████████          | 1/2 [00:02<00:02,  2.00s/step, reward=1]"
	bar2 := "T: 100%|████████████████████| 2/2 [00:02<00:00,  1.00step/s, reward=2]"
	want := "step:1 - critic/score/mean:1.0\n" + // no bar drawn yet: plain line
		"\r" + bar1 + "\x1b[K" +
		"\r\x1b[Kstep:2 - critic/score/mean:2.0\n" + bar1b + // erase bar, print, redraw
		"\r" + bar2 + "\x1b[K" +
		"\r" + bar2 + "\x1b[K\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
