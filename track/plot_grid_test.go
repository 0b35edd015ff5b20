package track

import (
	"image"
	"math"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestSummaryGridVector: drawGrid, which draws summary.svg, lays the
// charts out as summaryGrid tiles summary.png: drawn onto a bitmap canvas
// it gives the same pixels (five charts, a 3×2 grid with an empty cell).
func TestSummaryGridVector(t *testing.T) {
	var recs []Record
	for s := 1; s <= 40; s++ {
		recs = append(recs, Record{Step: s, Data: map[string]float64{"a": math.Sin(float64(s) / 5), "b": float64(s), "c": 1, "d": -float64(s), "e": 2}})
	}
	var plots []*plot.Plot
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		p, err := buildPlot(k, collectSeries(recs, []string{k}, 0), 0, 640, 400)
		if err != nil {
			t.Fatal(err)
		}
		plots = append(plots, p)
	}
	var imgs []image.Image
	for _, p := range plots {
		imgs = append(imgs, renderPNG(p, 640, 400))
	}
	want := summaryGrid(imgs)
	c := vgimg.NewWith(vgimg.UseWH(pxLen(3*640), pxLen(2*400)), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(colBackground))
	drawGrid(c, plots, 640, 400)
	got := c.Image()
	diff := 0
	for y := 0; y < 800; y++ {
		for x := 0; x < 1920; x++ {
			r1, g1, b1, _ := want.At(x, y).RGBA()
			r2, g2, b2, _ := got.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				diff++
			}
		}
	}
	if want.Bounds() != got.Bounds() || diff != 0 {
		t.Errorf("grid %v vs summary.png %v, %d of %d pixels differ", got.Bounds(), want.Bounds(), diff, 1920*800)
	}
}
