package track

import (
	"math"
	"testing"
)

func TestPyFloat(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: constant 0.1+0.2 would fold to exactly 0.3
	// Expected strings are Python 3's repr(float(x)).
	cases := []struct {
		v    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{-2.5, "-2.5"},
		{0.1, "0.1"},
		{tenth + fifth, "0.30000000000000004"},
		{1e-4, "0.0001"},
		{1.5e-5, "1.5e-05"},
		{1e-5, "1e-05"},
		{123456789, "123456789.0"},
		{1e15, "1000000000000000.0"},
		{1e16, "1e+16"},
		{1.2345e16, "1.2345e+16"},
		{1e100, "1e+100"},
		{-3.25e-300, "-3.25e-300"},
		{12.5, "12.5"},
		{math.NaN(), "nan"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{float64(float32(0.1)), "0.10000000149011612"},
	}
	for _, c := range cases {
		if got := PyFloat(c.v); got != c.want {
			t.Errorf("PyFloat(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestFormatStep(t *testing.T) {
	got := FormatStep(7, map[string]float64{
		"timing_s/gen":      1.5,
		"actor/entropy":     0.25,
		"critic/score/mean": math.NaN(),
	})
	// veRL: "step:7 - " + " - ".join(f"{k}:{pprint.pformat(v)}"), keys sorted here.
	want := "step:7 - actor/entropy:0.25 - critic/score/mean:nan - timing_s/gen:1.5"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := FormatStep(0, nil); got != "step:0" {
		t.Errorf("empty: %q", got)
	}
}

func TestFmtInterval(t *testing.T) {
	// tqdm.format_interval: MM:SS below an hour, H:MM:SS above.
	cases := map[float64]string{0: "00:00", 59.9: "00:59", 83: "01:23", 3600: "1:00:00", 36610: "10:10:10", math.NaN(): "?"}
	for in, want := range cases {
		if got := fmtInterval(in); got != want {
			t.Errorf("fmtInterval(%v) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkFormatStep(b *testing.B) {
	m := map[string]float64{}
	for i := range 60 {
		m["metric/"+string(rune('a'+i%26))+string(rune('a'+i/26))] = float64(i) * 0.37
	}
	for b.Loop() {
		_ = FormatStep(12, m)
	}
}

func TestFormatNum(t *testing.T) {
	// tqdm.format_num: f = "{:.3g}" with "+0"->"+", "-0"->"-"; Python str(v) if not longer.
	cases := []struct {
		v    float64
		want string
	}{
		{0.5, "0.5"},           // f "0.5", str "0.5": equal length -> str
		{2, "2"},               // f "2" shorter than "2.0"
		{0.123456, "0.123"},    // f shorter
		{1e-5, "1e-5"},         // f "1e-05" -> "1e-5", shorter than "1e-05"
		{-0.5, "-.5"},          // f "-0.5" -> "-.5" (tqdm's quirk)
		{123456, "1.23e+5"},    // f "1.23e+05" -> "1.23e+5", shorter than "123456.0"
		{1234.5, "1234.5"},     // f "1.23e+3" (7 chars) is longer than "1234.5"
		{math.NaN(), "nan"},    // equal -> str
		{math.Inf(-1), "-inf"}, // equal -> str
	}
	for _, c := range cases {
		if got := formatNum(c.v); got != c.want {
			t.Errorf("formatNum(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
