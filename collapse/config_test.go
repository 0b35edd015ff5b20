package collapse

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestConfigDefaults(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), CodeDefaultConfig()} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	c := CodeDefaultConfig()
	if c.ComputeFreq != 10 || c.MicroBatchSize != 16 || c.FirstTurnEnabled || c.MultiTurnEnabled || c.NumSamples != AllSamples {
		t.Fatalf("%+v", c)
	}
}

func TestConfigValidateAll(t *testing.T) {
	c := Config{ComputeFreq: -1, MicroBatchSize: -2, NumSamples: -1, StdEps: math.NaN(), EMADecay: 2, ContextWindowMode: "window", LogProbWorldSize: -2}
	err := c.Validate()
	var j interface{ Unwrap() []error }
	if !errors.As(err, &j) || len(j.Unwrap()) != 7 {
		t.Fatalf("want 7 errors, got %v", err)
	}
	for _, s := range []string{"compute_freq", "micro_batch_size", "num_samples", "std_eps", "ema_decay",
		`unknown context_window_mode "window" (valid: full, limited_multi_turn, single_turn)`, "world size"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("missing %q", s)
		}
	}
}

func TestConfigYAML(t *testing.T) {
	c := DefaultConfig()
	src := "compute_freq: 3\nmicro_batch_size: 8\nfirst_turn_enabled: false\nmulti_turn_enabled: true\nnum_samples: ALL\nstd_eps: 0.01\nema_decay: 0.5\n"
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.ComputeFreq, want.MicroBatchSize, want.FirstTurnEnabled, want.NumSamples, want.StdEps, want.EMADecay = 3, 8, false, AllSamples, 0.01, 0.5
	if c != want {
		t.Fatalf("got %+v", c)
	}
	for src, ok := range map[string]bool{
		"num_samples: 32": true, "num_samples: all": true, "num_samples: null": false, "num_samples: 0": false,
		"num_samples: -3": false, "num_samples: some": false, "num_samples: [1]": false,
		// Upstream: a string must be "all"; numbers go through int(), so
		// 1.5 → 1 and 0.5 → 0 (rejected); true is 1.
		"num_samples: 1.5": true, "num_samples: 0.5": false, `num_samples: "64"`: false, "num_samples: true": true,
		"num_samples: false": false, "num_samples: .nan": false, `num_samples: "All"`: true,
	} {
		c := DefaultConfig()
		err := yaml.Unmarshal([]byte(src), &c)
		if (err == nil) != ok {
			t.Errorf("%q: err %v", src, err)
		}
	}
	out, err := yaml.Marshal(map[string]NumSamples{"a": AllSamples, "b": 64})
	if err != nil || string(out) != "a: all\nb: 64\n" {
		t.Fatalf("%q %v", out, err)
	}
}

func FuzzParseNumSamples(f *testing.F) {
	for _, s := range []string{"all", "ALL", "64", "0", "-1", " 7 ", "x", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNumSamples(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("negative %d from %q", n, s)
		}
		back, err := ParseNumSamples(n.String())
		if err != nil || back != n {
			t.Fatalf("round trip %q → %v → %v, %v", s, n, back, err)
		}
	})
}

// FuzzMatrixMetrics: arbitrary small matrices never panic, and MI never
// exceeds its ln N upper bound by more than rounding when all entries are
// finite (matched ≤ logsumexp, so matched − marginal ≤ ln N per row).
func FuzzMatrixMetrics(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, uint8(2))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, cols uint8) {
		n := int(cols%6) + 1
		rows := len(raw) / n
		if rows == 0 {
			return
		}
		m := Matrix{}
		for i := range rows {
			var l, s []float64
			for j := range n {
				v := -float64(raw[i*n+j]) / 16
				l = append(l, v)
				s = append(s, 3*v)
			}
			m.L, m.S = append(m.L, l), append(m.S, s)
			m.Col = append(m.Col, i%n)
		}
		out, _, err := MatrixMetrics(m, 1e-3, 0.9, EMA{})
		if err != nil {
			t.Fatal(err)
		}
		if out[NameMIEstimate] > math.Log(float64(n))+1e-9 {
			t.Fatalf("MI %v above ln %d", out[NameMIEstimate], n)
		}
		if a := out[NameRetrievalAccuracy]; a < 0 || a > 1 {
			t.Fatalf("accuracy %v", a)
		}
	})
}

// FuzzConfigYAML: decoding never panics and a config that validates builds
// a detector.
func FuzzConfigYAML(f *testing.F) {
	f.Add("compute_freq: 5\nnum_samples: all\n")
	f.Add("num_samples: null\n")
	f.Add("- 1\n")
	f.Add("ema_decay: .nan\nstd_eps: -1\n")
	f.Fuzz(func(t *testing.T, src string) {
		c := DefaultConfig()
		if err := yaml.Unmarshal([]byte(src), &c); err != nil {
			return
		}
		if c.Validate() != nil {
			return
		}
		if _, err := NewDetector(c, nil); err != nil {
			t.Fatalf("valid config rejected: %v", err)
		}
	})
}

// num_samples values upstream's int() conversion accepts: 64 → 64, 1.9 → 1,
// true → 1.
func TestNumSamplesYAMLValues(t *testing.T) {
	for src, want := range map[string]NumSamples{"64": 64, "1.9": 1, "true": 1, "all": AllSamples, "0x10": 16} {
		var n NumSamples
		if err := yaml.Unmarshal([]byte(src), &n); err != nil || n != want {
			t.Errorf("%s: got %v, %v; want %v", src, n, err, want)
		}
	}
}
