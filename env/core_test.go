package env

import (
	"context"
	"strings"
	"testing"

	"ragen/internal/pyrand"
)

// The pyrand generators are the seeded sources envs play with.
var (
	_ Rand = (*pyrand.Generator)(nil)
	_ Rand = (*pyrand.Random)(nil)
	_ Rand = (*pyrand.Legacy)(nil)
	_ Rand = (*Scripted)(nil)
)

// sum adds at run time in order (constant folding would be exact).
func sum(xs ...float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// Expected strings are CPython 3.11 repr()/str() of the same values.
func TestFormatReward(t *testing.T) {
	tests := []struct {
		sum    float64
		allInt bool
		want   string
	}{
		{0, true, "0"}, // no actions executed: int 0
		{1, true, "1"}, // FrozenLake goal
		{-3, true, "-3"},
		{1, false, "1.0"},
		{-0.1, false, "-0.1"},
		{0.9, false, "0.9"},
		{10.9, false, "10.9"},
		{sum(-0.1, -0.1, -0.1), false, "-0.30000000000000004"},
		{sum(-0.1, 1, 10, -0.1), false, "10.8"},
		{1e-05, false, "1e-05"},
		{2.5e-07, false, "2.5e-07"},
		{1e16, false, "1e+16"},
		{1.5e16, false, "1.5e+16"},
		{1e15, false, "1000000000000000.0"},
		{123456789012345.6, false, "123456789012345.6"},
		{0.0001, false, "0.0001"},
		{0.00015000000000000001, false, "0.00015000000000000001"},
		{100, false, "100.0"},
		{1e22, false, "1e+22"},
	}
	for _, tc := range tests {
		if got := FormatReward(tc.sum, tc.allInt); got != tc.want {
			t.Errorf("FormatReward(%v, %v) = %q, want %q", tc.sum, tc.allInt, got, tc.want)
		}
	}
}

func TestPyFloatReprSpecial(t *testing.T) {
	negZero := 0.0
	negZero = -negZero
	for _, tc := range []struct {
		x    float64
		want string
	}{{negZero, "-0.0"}} {
		if got := PyFloatRepr(tc.x); got != tc.want {
			t.Errorf("PyFloatRepr(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
}

type testConfig struct {
	Name    string         `yaml:"name"`
	Steps   int            `yaml:"max_steps"`
	Rate    float64        `yaml:"success_rate"`
	Slip    bool           `yaml:"is_slippery"`
	Dim     [2]int         `yaml:"dim_room"`
	DimX    *int           `yaml:"dim_x"`
	Lookup  map[int]string `yaml:"grid_lookup"`
	Vocab   map[string]string
	private int
}

func TestDecodeConfig(t *testing.T) {
	c := testConfig{Name: "a", Steps: 100, Rate: 0.8, Slip: true, Dim: [2]int{6, 6}}
	err := DecodeConfig(map[string]any{
		"name":         "b",
		"max_steps":    7,
		"success_rate": 1, // int accepted for a float field
		"is_slippery":  false,
		"dim_room":     []any{8, 9},
		"dim_x":        5,
		"grid_lookup":  map[string]any{"0": "W", "1": "."},
	}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "b" || c.Steps != 7 || c.Rate != 1 || c.Slip || c.Dim != [2]int{8, 9} || c.DimX == nil || *c.DimX != 5 {
		t.Errorf("decoded %+v", c)
	}
	if c.Lookup[0] != "W" || c.Lookup[1] != "." || len(c.Lookup) != 2 {
		t.Errorf("grid_lookup = %v", c.Lookup)
	}
	// Keys absent from the map keep their defaults; nil map is all defaults.
	d := testConfig{Steps: 3}
	if err := DecodeConfig(nil, &d); err != nil || d.Steps != 3 {
		t.Errorf("nil config: %v %+v", err, d)
	}
	// null resets a pointer.
	if err := DecodeConfig(map[string]any{"dim_x": nil}, &c); err != nil || c.DimX != nil {
		t.Errorf("dim_x: null: %v %v", err, c.DimX)
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  map[string]any
		want []string
	}{
		{map[string]any{"max_step": 3}, []string{`unknown key "max_step"`, `did you mean "max_steps"`, "valid keys: dim_room, dim_x, grid_lookup, is_slippery, max_steps, name, success_rate"}},
		{map[string]any{"max_steps": "ten"}, []string{`key "max_steps"`}},
		{map[string]any{"max_steps": 1.5}, []string{`key "max_steps"`}},
		{map[string]any{"is_slippery": "yes please"}, []string{`key "is_slippery"`}},
		{map[string]any{"max_steps": nil}, []string{`key "max_steps": null`}},
		{map[string]any{"dim_room": []any{1, 2, 3}}, []string{`key "dim_room"`}},
		{map[string]any{"zzz": 1, "max_steps": "x"}, []string{`unknown key "zzz"`, `key "max_steps"`}},
	}
	for _, tc := range tests {
		c := testConfig{}
		err := DecodeConfig(tc.cfg, &c)
		if err == nil {
			t.Errorf("%v: want error", tc.cfg)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not contain %q", tc.cfg, err, w)
			}
		}
	}
}

type nopEnv struct{ cfg testConfig }

func (n *nopEnv) Reset(context.Context, int64, Mode) (string, error) { return "", nil }
func (n *nopEnv) Step(context.Context, Action) (StepResult, error)   { return StepResult{}, nil }
func (n *nopEnv) Render() string                                     { return n.cfg.Name }
func (n *nopEnv) Close() error                                       { return nil }

func TestRegistry(t *testing.T) {
	Register("test_nop", func(m map[string]any) (BaseEnv, error) {
		e := &nopEnv{cfg: testConfig{Name: "default"}}
		return e, DecodeConfig(m, &e.cfg)
	})
	e, err := New("test_nop", map[string]any{"name": "x"})
	if err != nil || e.Render() != "x" {
		t.Fatalf("New: %v", err)
	}
	if _, err := New("test_nop", map[string]any{"bogus": 1}); err == nil || !strings.Contains(err.Error(), "test_nop") {
		t.Errorf("bad config error = %v", err)
	}
	_, err = New("no_such_env", nil)
	if err == nil || !strings.Contains(err.Error(), `"no_such_env"`) || !strings.Contains(err.Error(), "test_nop") {
		t.Errorf("unknown type error = %v", err)
	}
	found := false
	for _, ty := range Types() {
		found = found || ty == "test_nop"
	}
	if !found {
		t.Errorf("Types() = %v lacks test_nop", Types())
	}
	defer func() {
		if recover() == nil {
			t.Error("duplicate Register did not panic")
		}
	}()
	Register("test_nop", func(map[string]any) (BaseEnv, error) { return nil, nil })
}

func TestScripted(t *testing.T) {
	s := NewScripted([]float64{0.5, 0.25}, []int{2})
	if s.Float64() != 0.5 || s.Float64() != 0.25 || s.Intn(3) != 2 {
		t.Fatal("scripted values out of order")
	}
	if f, i := s.Remaining(); f != 0 || i != 0 {
		t.Errorf("Remaining = %d, %d", f, i)
	}
	for name, f := range map[string]func(){
		"float exhausted": func() { s.Float64() },
		"int exhausted":   func() { s.Intn(2) },
		"int range":       func() { NewScripted(nil, []int{5}).Intn(5) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
