package track

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/vgimg"
)

func TestEMASmooth(t *testing.T) {
	// w = 0.5: last = 0.5*last + 0.5*x, debiased by 1 - 0.5^n.
	// x1 = 2: last 1, debias 0.5 -> 2.
	// x2 = 4: last 0.5+2 = 2.5, debias 0.75 -> 10/3.
	// NaN passes through, not counted.
	// x4 = 0: last 1.25, debias 0.875 -> 10/7.
	got := emaSmooth([]float64{2, 4, math.NaN(), 0}, 0.5)
	want := []float64{2, 10.0 / 3, math.NaN(), 10.0 / 7}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(want[i]) && math.Abs(got[i]-want[i]) > 1e-12) {
			t.Errorf("point %d = %v, want %v", i, got[i], want[i])
		}
	}
	// w = 0 is the raw series.
	if got := emaSmooth([]float64{1, 5}, 0); got[0] != 1 || got[1] != 5 {
		t.Errorf("w=0: %v", got)
	}
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi  float64
		n       int
		integer bool
		want    []float64
		dec     int
	}{
		// span 1, 5 ticks -> raw 0.2 -> step 0.2, 1 decimal.
		{0, 1, 5, false, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 1},
		// span 200, 4 ticks -> raw 50 -> step 50.
		{0, 200, 4, true, []float64{0, 50, 100, 150, 200}, 0},
		// span 0.0021, 4 ticks -> raw 0.000525 -> step 0.001 (next of 1,2,5 x 1e-4 is 1e-3).
		{-0.0001, 0.002, 4, false, []float64{0, 0.001, 0.002}, 3},
		// integer axis over 3 steps: spacing at least 1.
		{0, 3, 10, true, []float64{0, 1, 2, 3}, 0},
		// raw 0.3 -> step 0.5 leaves only 0.5 inside; next smaller 0.2.
		{0.05, 0.95, 3, false, []float64{0.2, 0.4, 0.6, 0.8}, 1},
		// integer axis: no spacing below 1, even with one tick.
		{0.5, 1.5, 3, true, []float64{1}, 0},
		// negative range: raw 2 -> step 2.
		{-5, 3, 4, false, []float64{-4, -2, 0, 2}, 0},
	}
	for _, c := range cases {
		got, dec := niceTicks(c.lo, c.hi, c.n, c.integer)
		if dec != c.dec || len(got) != len(c.want) {
			t.Errorf("niceTicks(%v, %v, %d) = %v dec %d, want %v dec %d", c.lo, c.hi, c.n, got, dec, c.want, c.dec)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
				break
			}
		}
	}
}

func TestTickLabel(t *testing.T) {
	cases := []struct {
		v    float64
		dec  int
		want string
	}{{0.5, 1, "0.5"}, {100, 0, "100"}, {0.0015, 4, "0.0015"}, {2e6, 0, "2e+06"}, {-0.25, 2, "-0.25"}}
	for _, c := range cases {
		if got := tickLabel(c.v, c.dec); got != c.want {
			t.Errorf("tickLabel(%v, %d) = %q, want %q", c.v, c.dec, got, c.want)
		}
	}
}

func TestFileName(t *testing.T) {
	cases := map[string]string{"critic/score/mean": "critic_score_mean", "val-env/*/success": "val-env___success", "/": "chart", "a b": "a_b"}
	for in, want := range cases {
		if got := fileName(in); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}

func linearRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		s := i + 1
		recs[i] = Record{Step: s, Data: map[string]float64{"critic/score/mean": float64(s) / float64(n)}}
	}
	return recs
}

func near(a, b color.RGBA, tol int) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return d(a.R, b.R) <= tol && d(a.G, b.G) <= tol && d(a.B, b.B) <= tol
}

func TestPlotCurvePixels(t *testing.T) {
	dir := t.TempDir()
	recs := linearRecords(50)
	files, err := PlotCharts(recs, []Chart{{Name: "r", Title: "reward", Keys: []string{"critic/score/mean"}}}, dir, PlotOptions{NoSmoothing: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[0]) != "r.png" || filepath.Base(files[1]) != "summary.png" {
		t.Fatalf("files %v", files)
	}
	img := decodePNG(t, files[0])
	if img.Bounds().Dx() != 640 || img.Bounds().Dy() != 400 {
		t.Fatalf("size %v", img.Bounds())
	}
	rgba := func(x, y int) color.RGBA {
		r, g, b, _ := img.At(x, y).RGBA()
		return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
	}
	if rgba(0, 0) != colBackground || rgba(639, 399) != colBackground {
		t.Error("corners are not background")
	}
	// Map the data to pixels as the library laid the chart out and check
	// that the series colour is within a pixel of every point of the line
	// y = s/50.
	ss := collectSeries(recs, []string{"critic/score/mean"}, 0)
	p, err := buildPlot("reward", ss, 0, 640, 400)
	if err != nil {
		t.Fatal(err)
	}
	c := vgimg.NewWith(vgimg.UseWH(pxLen(640), pxLen(400)), vgimg.UseDPI(dpi))
	dc := p.DataCanvas(chartCanvas(c))
	trX, trY := p.Transforms(&dc)
	px := func(s, v float64) (float64, float64) {
		return float64(trX(s)) * dpi / 72, 400 - float64(trY(v))*dpi/72
	}
	for s := 1; s <= 50; s++ {
		x, y := px(float64(s), float64(s)/50)
		found := false
		for dy := -1; dy <= 1 && !found; dy++ {
			for dx := -1; dx <= 1 && !found; dx++ {
				found = near(rgba(int(math.Round(x))+dx, int(math.Round(y))+dy), palette[0], 40)
			}
		}
		if !found {
			t.Errorf("step %d: no curve pixel near (%.1f, %.1f)", s, x, y)
		}
	}
	// Far from the line (upper right of the plot area, where y = s/50 is
	// high only at the far right; upper middle is empty) there is no
	// curve colour.
	x0, yTop := px(10, 0.95)
	x1, _ := px(25, 0.95)
	for x := int(x0); x < int(x1); x++ {
		if near(rgba(x, int(yTop)), palette[0], 60) {
			t.Fatalf("curve colour at (%d, %d), far from the line", x, int(yTop))
		}
	}
	// The title is drawn: dark pixels in the top band.
	inked := false
	for x := 0; x < 640 && !inked; x++ {
		for y := 2; y < 25; y++ {
			if c := rgba(x, y); c.R < 80 && c.G < 80 && c.B < 80 {
				inked = true
				break
			}
		}
	}
	if !inked {
		t.Error("no title pixels")
	}
	// The SVG is written next to the PNG and holds the title.
	svg, err := os.ReadFile(filepath.Join(dir, "r.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("reward")) || !bytes.Contains(svg, []byte("<path")) {
		t.Errorf("r.svg does not look like the chart: %.200s", svg)
	}
	sum := decodePNG(t, files[1])
	if sum.Bounds().Dx() != 640 || sum.Bounds().Dy() != 400 {
		t.Errorf("summary of one chart is %v", sum.Bounds())
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func TestPlotJSONLDefaultCharts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.jsonl")
	j, err := OpenJSONL(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 30; s++ {
		m := map[string]float64{
			"critic/score/mean":         math.Sin(float64(s) / 5),
			"train/Sokoban/success":     float64(s) / 30,
			"train/FrozenLake/success":  float64(s) / 60,
			"actor/entropy":             math.NaN(), // all NaN: no chart
			"rollout/filter_kept_ratio": 0.25,       // constant: still a chart
		}
		if s%10 == 0 {
			m["val-env/Sokoban/success"] = float64(s) / 40
		}
		j.Log(s, m)
	}
	j.Close()
	out := filepath.Join(dir, "plots")
	files, err := PlotJSONL(path, out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := "success.png reward.png filter_kept_ratio.png val_success.png summary.png"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("files %q, want %q", got, want)
	}
	// Four charts -> a 2×2 grid.
	if b := decodePNG(t, filepath.Join(out, "summary.png")).Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Errorf("summary size %v", b)
	}
	// summary.svg is the same grid in vector form: 1280×800 px at 96 dpi
	// is 960×600 pt, with each chart's title.
	svg, err := os.ReadFile(filepath.Join(out, "summary.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte(`width="960pt" height="600pt"`)) {
		t.Errorf("summary.svg size: %.300s", svg)
	}
	for _, title := range []string{"success", "reward", "filter_kept_ratio"} {
		if !bytes.Contains(svg, []byte(title)) {
			t.Errorf("summary.svg has no %q", title)
		}
	}
}

func TestPlotKeys(t *testing.T) {
	dir := t.TempDir()
	recs := linearRecords(3)
	files, err := Plot(recs, []string{"critic/score/mean", "missing/key"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[0]) != "critic_score_mean.png" {
		t.Errorf("files %v", files)
	}
	// A single point and NaN-broken series draw without trouble.
	one := []Record{{Step: 5, Data: map[string]float64{"a": 1}}, {Step: 6, Data: map[string]float64{"a": math.NaN()}}}
	if _, err := Plot(one, []string{"a"}, dir); err != nil {
		t.Error(err)
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Plot(nil, nil, dir); !errors.Is(err, ErrNoData) {
		t.Errorf("no records: %v", err)
	}
	if _, err := Plot(linearRecords(3), []string{"nope"}, dir); !errors.Is(err, ErrNoData) {
		t.Errorf("absent key: %v", err)
	}
	for _, o := range []PlotOptions{{Width: 10}, {Height: 100000}, {Smoothing: 1}, {Smoothing: -0.1}} {
		if _, err := PlotCharts(linearRecords(3), DefaultCharts(), dir, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := PlotJSONL(filepath.Join(dir, "missing.jsonl"), dir); err == nil {
		t.Error("missing file accepted")
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Plot(linearRecords(3), nil, filepath.Join(f, "sub")); err == nil {
		t.Error("output under a regular file accepted")
	}
}

func BenchmarkPlot(b *testing.B) {
	recs := linearRecords(500)
	dir := b.TempDir()
	for b.Loop() {
		if _, err := PlotCharts(recs, DefaultCharts(), dir, PlotOptions{NoSummary: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzPlot(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, int64(1), int64(2), int64(3))
	f.Add(-1e308, 1e308, math.NaN(), int64(0), int64(1<<40), int64(5))
	f.Add(1.0, 1.0+1e-15, math.Inf(1), int64(7), int64(7), int64(7))
	f.Add(5e-324, -5e-324, 0.0, int64(0), int64(0), int64(1))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, a, b, c float64, s1, s2, s3 int64) {
		var recs []Record
		for i, p := range []struct {
			s int64
			v float64
		}{{s1, a}, {s2, b}, {s3, c}} {
			if p.s < 0 || p.s > math.MaxInt32 {
				continue
			}
			recs = append(recs, Record{Step: int(p.s), Data: map[string]float64{"k": p.v, "j": float64(i)}})
		}
		_, err := PlotCharts(recs, []Chart{{Name: "k", Keys: []string{"k", "j"}}}, dir, PlotOptions{Width: 200, Height: 150, NoSummary: true})
		if err != nil && !errors.Is(err, ErrNoData) {
			t.Fatal(err)
		}
	})
}
