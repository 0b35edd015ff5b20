package track

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart is one PNG (and SVG): every metric whose key matches one of Keys
// becomes a series (at most MaxSeries, in sorted key order).
type Chart struct {
	Name  string   // file name without ".png"
	Title string   // drawn above the plot
	Keys  []string // metric keys or path.Match patterns ("train/*/success")
}

// MaxSeries bounds the number of series drawn in one chart.
const MaxSeries = 8

// DefaultCharts are the main curves of a RAGEN run: training success per env
// tag, reward (veRL's critic/score/mean), policy entropy, KL (ppo_kl and
// kl_loss), the rollout filter's kept ratio, the collapse detector's mutual
// information estimate, and validation success per env tag.
func DefaultCharts() []Chart {
	return []Chart{
		{"success", "train success", []string{"train/*/success", "rollout/success"}},
		{"reward", "reward (critic/score/mean)", []string{"critic/score/mean"}},
		{"entropy", "policy entropy (actor/entropy)", []string{"actor/entropy"}},
		{"kl", "KL", []string{"actor/ppo_kl", "actor/kl_loss"}},
		{"filter_kept_ratio", "filter kept ratio", []string{"rollout/filter_kept_ratio"}},
		{"mi", "collapse: mutual information", []string{"collapse*/mi_estimate"}},
		{"val_success", "validation success", []string{"val-env/*/success"}},
	}
}

// PlotOptions sizes and styles the charts. The zero value gives the defaults.
type PlotOptions struct {
	Width, Height int // one chart, 640×400 by default (each summary cell too)
	// Smoothing is TensorBoard's EMA weight for the smoothed line (debiased),
	// 0.6 by default; set NoSmoothing to draw the raw line only.
	Smoothing   float64
	NoSmoothing bool
	NoSummary   bool // do not write summary.png (and summary.svg)
	NoSVG       bool // do not write <name>.svg next to each <name>.png, nor summary.svg
}

func (o PlotOptions) withDefaults() (PlotOptions, error) {
	if o.Width == 0 {
		o.Width = 640
	}
	if o.Height == 0 {
		o.Height = 400
	}
	if o.Width < 200 || o.Height < 150 || o.Width > 8000 || o.Height > 8000 {
		return o, fmt.Errorf("track: plot: size %dx%d outside 200x150..8000x8000", o.Width, o.Height)
	}
	if o.Smoothing == 0 && !o.NoSmoothing {
		o.Smoothing = 0.6
	}
	if o.NoSmoothing {
		o.Smoothing = 0
	}
	if o.Smoothing < 0 || o.Smoothing >= 1 || math.IsNaN(o.Smoothing) {
		return o, fmt.Errorf("track: plot: smoothing %v outside [0, 1)", o.Smoothing)
	}
	return o, nil
}

// ErrNoData is returned when none of the charts has a finite value to draw.
var ErrNoData = errors.New("track: plot: no data for any chart")

// Plot writes one PNG per key into outDir plus summary.png, a grid of all
// charts, and an SVG of each chart and of the grid (summary.svg) next to
// its PNG. Charts are drawn with
// gonum.org/v1/plot. Each key (or path.Match pattern) is one chart named
// after it; nil keys draw DefaultCharts. Charts without data are skipped.
// It returns the PNG paths written.
func Plot(records []Record, keys []string, outDir string) ([]string, error) {
	if keys == nil {
		return PlotCharts(records, DefaultCharts(), outDir, PlotOptions{})
	}
	charts := make([]Chart, len(keys))
	for i, k := range keys {
		charts[i] = Chart{Name: fileName(k), Title: k, Keys: []string{k}}
	}
	return PlotCharts(records, charts, outDir, PlotOptions{})
}

// PlotJSONL reads a metrics file (ReadJSONL) and draws DefaultCharts.
func PlotJSONL(path, outDir string) ([]string, error) {
	recs, err := ReadJSONL(path)
	if err != nil {
		return nil, err
	}
	return Plot(recs, nil, outDir)
}

// PlotCharts is Plot with explicit charts and options.
func PlotCharts(records []Record, charts []Chart, outDir string, opt PlotOptions) ([]string, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	var plots []*plot.Plot
	var names []string
	for _, c := range charts {
		ss := collectSeries(records, c.Keys, opt.Smoothing)
		if len(ss) == 0 {
			continue
		}
		p, err := buildPlot(c.Title, ss, opt.Smoothing, opt.Width, opt.Height)
		if err != nil {
			return nil, fmt.Errorf("track: plot %q: %w", c.Title, err)
		}
		plots = append(plots, p)
		name := c.Name
		if name == "" {
			name = fileName(c.Title)
		}
		names = append(names, name)
	}
	if len(plots) == 0 {
		return nil, ErrNoData
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("track: plot: %w", err)
	}
	var written []string
	var imgs []image.Image
	for i, p := range plots {
		img := renderPNG(p, opt.Width, opt.Height)
		imgs = append(imgs, img)
		pp := filepath.Join(outDir, names[i]+".png")
		if err := writePNG(pp, img); err != nil {
			return written, err
		}
		written = append(written, pp)
		if !opt.NoSVG {
			if err := writeSVG(filepath.Join(outDir, names[i]+".svg"), p, opt.Width, opt.Height); err != nil {
				return written, err
			}
		}
	}
	if !opt.NoSummary {
		pp := filepath.Join(outDir, "summary.png")
		if err := writePNG(pp, summaryGrid(imgs)); err != nil {
			return written, err
		}
		written = append(written, pp)
		if !opt.NoSVG {
			if err := writeSummarySVG(filepath.Join(outDir, "summary.svg"), plots, opt.Width, opt.Height); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// pxLen is a length of n pixels at the 96 dpi the PNGs are rendered at.
func pxLen(n int) vg.Length { return vg.Length(n) * vg.Inch / dpi }

const dpi = 96

// chartCanvas is the canvas a chart is drawn on: c less a margin at the
// top and the right.
func chartCanvas(c vg.CanvasSizer) vgdraw.Canvas {
	m := vg.Points(6)
	return vgdraw.Crop(vgdraw.New(c), 0, -m, 0, -m)
}

// renderPNG rasterises p at w×h pixels.
func renderPNG(p *plot.Plot, w, h int) image.Image {
	c := vgimg.NewWith(vgimg.UseWH(pxLen(w), pxLen(h)), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(colBackground))
	p.Draw(chartCanvas(c))
	return c.Image()
}

func writeSVG(name string, p *plot.Plot, w, h int) error {
	c := vgsvg.New(pxLen(w), pxLen(h))
	p.Draw(chartCanvas(c))
	return saveSVG(name, c)
}

// writeSummarySVG draws the charts in the grid of summaryGrid, each at
// w×h, as one SVG.
func writeSummarySVG(name string, plots []*plot.Plot, w, h int) error {
	cols, rows := gridShape(len(plots))
	c := vgsvg.New(pxLen(cols*w), pxLen(rows*h))
	drawGrid(c, plots, w, h)
	return saveSVG(name, c)
}

// drawGrid draws the charts onto c in the grid of summaryGrid.
func drawGrid(c vg.Canvas, plots []*plot.Plot, w, h int) {
	cols, rows := gridShape(len(plots))
	m := vg.Points(6)
	for i, p := range plots {
		x, y := i%cols, rows-1-i/cols // vg's y axis points up
		cell := vgdraw.Canvas{Canvas: c, Rectangle: vg.Rectangle{
			Min: vg.Point{X: pxLen(x * w), Y: pxLen(y * h)},
			Max: vg.Point{X: pxLen((x + 1) * w), Y: pxLen((y + 1) * h)},
		}}
		p.Draw(vgdraw.Crop(cell, 0, -m, 0, -m))
	}
}

func saveSVG(name string, c *vgsvg.Canvas) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("track: plot: %w", err)
	}
	_, werr := c.WriteTo(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("track: plot: %s: %w", name, err)
	}
	return nil
}

// summaryGrid tiles the charts, two columns up to four charts, three beyond.
func summaryGrid(imgs []image.Image) *image.RGBA {
	cols, rows := gridShape(len(imgs))
	cw, ch := imgs[0].Bounds().Dx(), imgs[0].Bounds().Dy()
	out := image.NewRGBA(image.Rect(0, 0, cols*cw, rows*ch))
	draw.Draw(out, out.Bounds(), image.NewUniform(colBackground), image.Point{}, draw.Src)
	for i, img := range imgs {
		at := image.Pt((i%cols)*cw, (i/cols)*ch)
		draw.Draw(out, image.Rectangle{Min: at, Max: at.Add(img.Bounds().Size())}, img, img.Bounds().Min, draw.Src)
	}
	return out
}

// gridShape is the summary grid for n charts: two columns up to four
// charts, three beyond.
func gridShape(n int) (cols, rows int) {
	cols = 2
	switch {
	case n == 1:
		cols = 1
	case n > 4:
		cols = 3
	}
	return cols, (n + cols - 1) / cols
}

func writePNG(p string, img image.Image) error {
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("track: plot: %w", err)
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	werr := enc.Encode(f, img)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("track: plot: %s: %w", p, err)
	}
	return nil
}

// fileName turns a metric key into a file name: "critic/score/mean" ->
// "critic_score_mean".
func fileName(key string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, key)
	s = strings.Trim(s, "._")
	if s == "" {
		s = "chart"
	}
	return s
}

type series struct {
	key    string
	steps  []float64
	raw    []float64 // NaN breaks the line
	smooth []float64
}

// collectSeries gathers the points of every key matching one of the
// patterns, sorted by step. Keys whose values are all non-finite are left
// out.
func collectSeries(records []Record, patterns []string, w float64) []series {
	var keys []string
	seen := map[string]bool{}
	for _, r := range records {
		for k := range r.Data {
			if seen[k] {
				continue
			}
			for _, p := range patterns {
				if ok, _ := path.Match(p, k); ok || p == k {
					seen[k] = true
					keys = append(keys, k)
					break
				}
			}
		}
	}
	slices.Sort(keys)
	var out []series
	for _, k := range keys {
		type pt struct{ s, v float64 }
		var pts []pt
		finite := false
		for _, r := range records {
			v, ok := r.Data[k]
			if !ok {
				continue
			}
			if math.IsInf(v, 0) {
				v = math.NaN()
			}
			finite = finite || !math.IsNaN(v)
			pts = append(pts, pt{float64(r.Step), v})
		}
		if !finite {
			continue
		}
		slices.SortStableFunc(pts, func(a, b pt) int {
			switch {
			case a.s < b.s:
				return -1
			case a.s > b.s:
				return 1
			}
			return 0
		})
		s := series{key: k}
		for _, p := range pts {
			s.steps = append(s.steps, p.s)
			s.raw = append(s.raw, p.v)
		}
		s.smooth = emaSmooth(s.raw, w)
		out = append(out, s)
		if len(out) == MaxSeries {
			break
		}
	}
	return out
}

// emaSmooth is TensorBoard's scalar smoothing: a debiased exponential moving
// average with weight w; non-finite points pass through unchanged and do not
// enter the average.
func emaSmooth(v []float64, w float64) []float64 {
	out := make([]float64, len(v))
	last, n := 0.0, 0
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out[i] = x
			continue
		}
		last = last*w + (1-w)*x
		n++
		debias := 1.0
		if w > 0 {
			debias = 1 - math.Pow(w, float64(n))
		}
		out[i] = last / debias
	}
	return out
}

var (
	colBackground = color.RGBA{255, 255, 255, 255}
	colGrid       = color.RGBA{228, 228, 228, 255}
	palette       = []color.RGBA{
		{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {23, 190, 207, 255},
	}
)

// dataRange is the axis range of the series: x from step 0 when the run
// starts near it, y padded by 10%, degenerate ranges widened.
func dataRange(ss []series) (x0, x1, y0, y1 float64) {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for i, v := range s.raw {
			if math.IsNaN(v) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.steps[i]), math.Max(xmax, s.steps[i])
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	if xmin == xmax {
		xmin, xmax = xmin-1, xmax+1
	} else if xmin > 0 && xmin <= 0.1*xmax {
		xmin = 0 // start a run's axis at step 0
	}
	// Spans beyond ±MaxFloat64/4 are clamped so the tick arithmetic of the
	// plot library stays finite.
	const big = math.MaxFloat64 / 4
	ymin, ymax = math.Max(ymin, -big), math.Min(ymax, big)
	if ymin == ymax || ymax-ymin < 1e-300 {
		d := math.Max(math.Abs(ymin)*0.1, 0.5)
		ymin, ymax = ymin-d, ymax+d
	} else {
		pad := (ymax - ymin) * 0.1
		ymin, ymax = ymin-pad, ymax+pad
	}
	return xmin, xmax, ymin, ymax
}

// segments splits a line at NaN points: the plot library draws no NaN.
func segments(xs, ys []float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i, y := range ys {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: xs[i], Y: y})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func withAlpha(c color.RGBA, a float64) color.NRGBA {
	return color.NRGBA{c.R, c.G, c.B, uint8(math.Round(a * 255))}
}

// buildPlot lays out one chart: a faint raw line and a solid EMA line per
// series (only the raw line without smoothing), markers where a series has
// at most 40 points, a grid and a legend.
func buildPlot(title string, ss []series, smoothing float64, w, h int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.Legend.TextStyle.Font,
		&p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font, &p.X.Tick.Label.Font, &p.Y.Tick.Label.Font} {
		f.Variant = "Sans"
	}
	p.X.Tick.Marker = niceTicker{n: max(3, w/110), integer: true}
	p.Y.Tick.Marker = niceTicker{n: max(3, (h-110)/50)}
	p.X.Label.Text = "step"
	if smoothing > 0 {
		p.X.Label.Text = "step   (faint: raw, solid: EMA " + strconv.FormatFloat(smoothing, 'g', 3, 64) + ")"
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = dataRange(ss)
	// Room for the last point's marker at the right edge.
	p.X.Max += (p.X.Max/2 - p.X.Min/2) * 0.04
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = colGrid, colGrid
	p.Add(grid)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(14)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	for i, s := range ss {
		c := palette[i%len(palette)]
		var legendThumb plot.Thumbnailer
		add := func(ys []float64, col color.Color, width vg.Length) error {
			for _, seg := range segments(s.steps, ys) {
				l, err := plotter.NewLine(seg)
				if err != nil {
					return err
				}
				l.Color = col
				l.Width = width
				p.Add(l)
				legendThumb = l
			}
			return nil
		}
		var err error
		if smoothing > 0 {
			if err = add(s.raw, withAlpha(c, 0.35), vg.Points(0.75)); err == nil {
				err = add(s.smooth, c, vg.Points(1.4))
			}
		} else {
			err = add(s.raw, c, vg.Points(1.2))
		}
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.key, err)
		}
		if countFinite(s.raw) <= 40 {
			var pts plotter.XYs
			for _, seg := range segments(s.steps, s.raw) {
				pts = append(pts, seg...)
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("series %s: %w", s.key, err)
			}
			sc.GlyphStyle.Color = c
			sc.GlyphStyle.Radius = vg.Points(1.7)
			sc.GlyphStyle.Shape = vgdraw.CircleGlyph{}
			p.Add(sc)
			if legendThumb == nil {
				legendThumb = sc
			}
		}
		if legendThumb != nil {
			p.Legend.Add(s.key, legendThumb)
		}
	}
	return p, nil
}

// niceTicks returns tick values at a 1, 2 or 5 × 10^k spacing covering
// [lo, hi] with about n ticks, and the decimals their labels need. Integer
// ticks force a spacing of at least 1.
func niceTicks(lo, hi float64, n int, integer bool) ([]float64, int) {
	span := hi - lo
	if !(span > 0) {
		return []float64{lo}, 0
	}
	if math.IsInf(span, 0) { // |lo|, |hi| near MaxFloat64
		span = math.MaxFloat64
	}
	raw := span / float64(max(n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	for {
		if integer && step < 1 {
			step = 1
		}
		ticks := ticksAt(lo, hi, step)
		// Fewer than three ticks inside the range: take the next smaller
		// nice spacing (5 -> 2 -> 1 -> 0.5 ...), unless integer ticks forbid it.
		if len(ticks) >= 3 || (integer && step <= 1) || len(ticks) > 100 {
			return ticks, max(0, int(-math.Floor(math.Log10(step)+1e-9)))
		}
		step = smallerNice(step)
	}
}

func ticksAt(lo, hi, step float64) []float64 {
	var ticks []float64
	for i := math.Ceil(lo/step - 1e-9); ; i++ {
		t := i * step
		if t > hi+step*1e-9 || len(ticks) > 100 {
			break
		}
		if math.Abs(t) < step*1e-9 {
			t = 0
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// smallerNice returns the next nice spacing below step: 5 -> 2 -> 1 -> 0.5.
func smallerNice(step float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	switch m := math.Round(step / mag); {
	case m >= 5:
		return 2 * mag
	case m >= 2:
		return mag
	default:
		return mag / 2
	}
}

func tickLabel(v float64, dec int) string {
	a := math.Abs(v)
	if a != 0 && (a >= 1e6 || dec > 6) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// niceTicker labels about n ticks at a 1, 2 or 5 × 10^k spacing (integer
// spacing for steps), with a minor tick between labelled ones.
type niceTicker struct {
	n       int
	integer bool
}

func (t niceTicker) Ticks(lo, hi float64) []plot.Tick {
	major, dec := niceTicks(lo, hi, t.n, t.integer)
	var out []plot.Tick
	for i, v := range major {
		out = append(out, plot.Tick{Value: v, Label: tickLabel(v, dec)})
		if i+1 < len(major) && !(t.integer && major[i+1]-v < 2) {
			out = append(out, plot.Tick{Value: (v + major[i+1]) / 2})
		}
	}
	return out
}

func countFinite(v []float64) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			n++
		}
	}
	return n
}
