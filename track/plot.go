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
)

// Chart is one PNG: every metric whose key matches one of Keys becomes a
// series (at most MaxSeries, in sorted key order).
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

// PlotOptions sizes and styles the PNGs. The zero value gives the defaults.
type PlotOptions struct {
	Width, Height int // one chart, 640×400 by default (each summary cell too)
	// Smoothing is TensorBoard's EMA weight for the smoothed line (debiased),
	// 0.6 by default; set NoSmoothing to draw the raw line only.
	Smoothing   float64
	NoSmoothing bool
	NoSummary   bool // do not write summary.png
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
// charts. Each key (or path.Match pattern) is one chart named after it;
// nil keys draw DefaultCharts. Charts without data are skipped. It returns
// the paths written.
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
	var imgs []*image.RGBA
	var names []string
	for _, c := range charts {
		ss := collectSeries(records, c.Keys, opt.Smoothing)
		if len(ss) == 0 {
			continue
		}
		img := image.NewRGBA(image.Rect(0, 0, opt.Width, opt.Height))
		renderChart(img, c.Title, ss, opt.Smoothing)
		imgs = append(imgs, img)
		name := c.Name
		if name == "" {
			name = fileName(c.Title)
		}
		names = append(names, name)
	}
	if len(imgs) == 0 {
		return nil, ErrNoData
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("track: plot: %w", err)
	}
	var written []string
	for i, img := range imgs {
		p := filepath.Join(outDir, names[i]+".png")
		if err := writePNG(p, img); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	if !opt.NoSummary {
		p := filepath.Join(outDir, "summary.png")
		if err := writePNG(p, summaryGrid(imgs)); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// summaryGrid tiles the charts, two columns up to four charts, three beyond.
func summaryGrid(imgs []*image.RGBA) *image.RGBA {
	cols := 2
	switch {
	case len(imgs) == 1:
		cols = 1
	case len(imgs) > 4:
		cols = 3
	}
	rows := (len(imgs) + cols - 1) / cols
	cw, ch := imgs[0].Bounds().Dx(), imgs[0].Bounds().Dy()
	out := image.NewRGBA(image.Rect(0, 0, cols*cw, rows*ch))
	draw.Draw(out, out.Bounds(), image.NewUniform(colBackground), image.Point{}, draw.Src)
	for i, img := range imgs {
		at := image.Pt((i%cols)*cw, (i/cols)*ch)
		draw.Draw(out, image.Rectangle{Min: at, Max: at.Add(img.Bounds().Size())}, img, image.Point{}, draw.Src)
	}
	return out
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
	colText       = color.RGBA{34, 34, 34, 255}
	colMuted      = color.RGBA{110, 110, 110, 255}
	colAxis       = color.RGBA{60, 60, 60, 255}
	colGrid       = color.RGBA{228, 228, 228, 255}
	palette       = []color.RGBA{
		{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {23, 190, 207, 255},
	}
)

// layout is the geometry of one chart: the plot rectangle and the data range
// it maps.
type layout struct {
	plot       image.Rectangle
	x0, x1     float64 // step range
	y0, y1     float64 // value range
	xt, yt     []float64
	xdec, ydec int // tick label decimals
}

// frac is (v-lo)/(hi-lo), halved first so that spans near ±MaxFloat64 do
// not overflow.
func frac(v, lo, hi float64) float64 {
	return (v/2 - lo/2) / (hi/2 - lo/2)
}

func (l *layout) px(s float64) float64 {
	return float64(l.plot.Min.X) + frac(s, l.x0, l.x1)*float64(l.plot.Dx()-1)
}

func (l *layout) py(v float64) float64 {
	return float64(l.plot.Max.Y-1) - frac(v, l.y0, l.y1)*float64(l.plot.Dy()-1)
}

const legendScale = 1

// chartLayout computes ranges, ticks and margins for the given size.
func chartLayout(w, h int, ss []series) layout {
	var l layout
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
	if ymin == ymax {
		d := math.Max(math.Abs(ymin)*0.1, 0.5)
		ymin, ymax = ymin-d, ymax+d
	} else {
		pad := (ymax/2 - ymin/2) * 0.1
		ymin = math.Max(ymin-pad, -math.MaxFloat64)
		ymax = math.Min(ymax+pad, math.MaxFloat64)
	}
	l.x0, l.x1 = xmin, xmax
	l.y0, l.y1 = ymin, ymax

	// Rows of text above the plot: title (scale 2) and the legend.
	top := 10 + 2*glyphH + 12 + legendRows(w, ss)*lineH*legendScale + 6
	bottom := 10 + lineH + 6 + lineH + 6 // tick labels, "step"
	l.yt, l.ydec = niceTicks(ymin, ymax, max(3, (h-top-bottom)/50), false)
	l.xt, l.xdec = niceTicks(xmin, xmax, max(3, w/110), true)
	labelW := 0
	for _, t := range l.yt {
		labelW = max(labelW, textWidth(tickLabel(t, l.ydec), 1))
	}
	left := 10 + labelW + 8
	right := 20
	l.plot = image.Rect(left, top, w-right, h-bottom)
	return l
}

// legendRows is the number of legend lines the series need at width w.
func legendRows(w int, ss []series) int {
	if len(ss) == 0 {
		return 0
	}
	rows, x := 1, 10
	for _, s := range ss {
		ew := 18 + textWidth(s.key, legendScale) + 14
		if x+ew > w-10 && x > 10 {
			rows++
			x = 10
		}
		x += ew
	}
	return rows
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

// renderChart draws a complete chart on img.
func renderChart(img *image.RGBA, title string, ss []series, smoothing float64) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	draw.Draw(img, b, image.NewUniform(colBackground), image.Point{}, draw.Src)
	l := chartLayout(w, h, ss)

	// Title, scale 2 when it fits.
	scale := 2
	if textWidth(title, 2) > w-20 {
		scale = 1
	}
	drawText(img, (w-textWidth(title, scale))/2, 10, title, scale, colText)

	// Legend: a colour swatch and the key per series.
	x, y := 10, 10+2*glyphH+12
	for i, s := range ss {
		ew := 18 + textWidth(s.key, legendScale) + 14
		if x+ew > w-10 && x > 10 {
			x = 10
			y += lineH * legendScale
		}
		c := palette[i%len(palette)]
		fillRect(img, x, y+3, 14, 2, c)
		drawText(img, x+18, y, s.key, legendScale, colText)
		x += ew
	}

	// Grid and ticks.
	p := l.plot
	for _, t := range l.yt {
		yy := int(math.Round(l.py(t)))
		fillRect(img, p.Min.X, yy, p.Dx(), 1, colGrid)
		fillRect(img, p.Min.X-4, yy, 4, 1, colAxis)
		lab := tickLabel(t, l.ydec)
		drawText(img, p.Min.X-8-textWidth(lab, 1), yy-glyphH/2, lab, 1, colText)
	}
	lastRight := math.MinInt
	for _, t := range l.xt {
		xx := int(math.Round(l.px(t)))
		fillRect(img, xx, p.Min.Y, 1, p.Dy(), colGrid)
		fillRect(img, xx, p.Max.Y, 1, 4, colAxis)
		lab := tickLabel(t, l.xdec)
		lw := textWidth(lab, 1)
		lx := xx - lw/2
		if lx > lastRight+6 { // skip labels that would overlap
			drawText(img, lx, p.Max.Y+8, lab, 1, colText)
			lastRight = lx + lw
		}
	}
	// Axes: left and bottom lines plus a light frame.
	fillRect(img, p.Min.X, p.Min.Y, p.Dx(), 1, colGrid)
	fillRect(img, p.Max.X-1, p.Min.Y, 1, p.Dy(), colGrid)
	fillRect(img, p.Min.X-1, p.Min.Y, 1, p.Dy()+1, colAxis)
	fillRect(img, p.Min.X-1, p.Max.Y, p.Dx()+1, 1, colAxis)
	xl := "step"
	drawText(img, p.Min.X+(p.Dx()-textWidth(xl, 1))/2, p.Max.Y+8+lineH+4, xl, 1, colMuted)
	if smoothing > 0 {
		note := "faint: raw, solid: EMA " + strconv.FormatFloat(smoothing, 'g', 3, 64)
		stepRight := p.Min.X + (p.Dx()+textWidth(xl, 1))/2
		if nx := w - 10 - textWidth(note, 1); nx > stepRight+12 { // only where it fits
			drawText(img, nx, p.Max.Y+8+lineH+4, note, 1, colMuted)
		}
	}

	// Curves, clipped to the plot rectangle.
	clip := img.SubImage(p).(*image.RGBA)
	for i, s := range ss {
		c := palette[i%len(palette)]
		if smoothing > 0 {
			drawPolyline(clip, &l, s.steps, s.raw, c, 0.35, 1.0)
			drawPolyline(clip, &l, s.steps, s.smooth, c, 1, 1.8)
		} else {
			drawPolyline(clip, &l, s.steps, s.raw, c, 1, 1.6)
		}
		if countFinite(s.raw) <= 40 {
			for j, v := range s.raw {
				if !math.IsNaN(v) {
					fillDisc(clip, l.px(s.steps[j]), l.py(v), 2.2, c, 1)
				}
			}
		}
	}
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

// drawPolyline joins consecutive finite points; a NaN breaks the line.
func drawPolyline(img *image.RGBA, l *layout, xs, ys []float64, c color.RGBA, alpha, width float64) {
	for i := 1; i < len(ys); i++ {
		if math.IsNaN(ys[i-1]) || math.IsNaN(ys[i]) {
			continue
		}
		drawSegment(img, l.px(xs[i-1]), l.py(ys[i-1]), l.px(xs[i]), l.py(ys[i]), c, alpha, width)
	}
}

// drawSegment draws an anti-aliased segment of the given width: each pixel's
// coverage falls off linearly with its distance from the segment.
func drawSegment(img *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA, alpha, width float64) {
	for _, v := range []float64{x0, y0, x1, y1} {
		if math.IsNaN(v) || math.Abs(v) > 1e6 {
			return // not a drawable coordinate
		}
	}
	hw := width / 2
	r := image.Rect(int(math.Floor(math.Min(x0, x1)-hw-1)), int(math.Floor(math.Min(y0, y1)-hw-1)),
		int(math.Ceil(math.Max(x0, x1)+hw+2)), int(math.Ceil(math.Max(y0, y1)+hw+2))).Intersect(img.Bounds())
	dx, dy := x1-x0, y1-y0
	l2 := dx*dx + dy*dy
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			fx, fy := float64(px), float64(py)
			t := 0.0
			if l2 > 0 {
				t = math.Max(0, math.Min(1, ((fx-x0)*dx+(fy-y0)*dy)/l2))
			}
			ex, ey := fx-(x0+t*dx), fy-(y0+t*dy)
			d := math.Sqrt(ex*ex + ey*ey)
			cov := math.Max(0, math.Min(1, hw+0.5-d))
			if cov > 0 {
				blend(img, px, py, c, cov*alpha)
			}
		}
	}
}

func fillDisc(img *image.RGBA, cx, cy, rad float64, c color.RGBA, alpha float64) {
	if math.IsNaN(cx+cy) || math.Abs(cx) > 1e6 || math.Abs(cy) > 1e6 {
		return
	}
	r := image.Rect(int(cx-rad-1), int(cy-rad-1), int(cx+rad+2), int(cy+rad+2)).Intersect(img.Bounds())
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			d := math.Hypot(float64(px)-cx, float64(py)-cy)
			if cov := math.Max(0, math.Min(1, rad+0.5-d)); cov > 0 {
				blend(img, px, py, c, cov*alpha)
			}
		}
	}
}

// blend paints c over the pixel with opacity a in [0, 1].
func blend(img *image.RGBA, x, y int, c color.RGBA, a float64) {
	if a >= 1 {
		img.SetRGBA(x, y, c)
		return
	}
	d := img.RGBAAt(x, y)
	mix := func(dst, src uint8) uint8 { return uint8(math.Round(float64(dst)*(1-a) + float64(src)*a)) }
	img.SetRGBA(x, y, color.RGBA{mix(d.R, c.R), mix(d.G, c.G), mix(d.B, c.B), 255})
}
