package config

import (
	"strings"
	"testing"
)

// Regressions of issue 14's input-validation findings: each case failed
// (passed silently or named the wrong key) before.
func TestValidateHardening(t *testing.T) {
	cases := []struct {
		name  string
		ov    []string
		parts []string
	}{
		{"lr inf", []string{"actor_rollout_ref.actor.optim.lr=inf"},
			[]string{"actor_rollout_ref.actor.optim.lr: .inf is not finite"}},
		{"lr -inf", []string{"critic.optim.lr=-inf"},
			[]string{"critic.optim.lr: -.inf is not finite"}},
		{"gamma nan", []string{"algorithm.gamma=nan"},
			[]string{"algorithm.gamma: .nan is out of range"}},
		{"fractional steps", []string{"trainer.total_training_steps=2.7"},
			[]string{"trainer.total_training_steps: want an integer, found float 2.7"}},
		{"fractional save_freq", []string{"trainer.save_freq=1.5"},
			[]string{"trainer.save_freq: want an integer, found float 1.5"}},
		{"fractional keep", []string{"trainer.max_actor_ckpt_to_keep=2.5"},
			[]string{"trainer.max_actor_ckpt_to_keep: want an integer"}},
		{"top_p value above 1", []string{"actor_rollout_ref.rollout.rollout_filter_value=5"},
			[]string{"rollout_filter_value: 5 is out of range: want 0 < x <= 1"}},
		{"top_k_abs below 1", []string{"actor_rollout_ref.rollout.rollout_filter_strategy=top_k_abs", "actor_rollout_ref.rollout.rollout_filter_value=0.5"},
			[]string{"rollout_filter_value: 0.5 is out of range: want >= 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Load("base", tc.ov)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			err = Validate(tr)
			if err == nil {
				t.Fatalf("no error, want %q", tc.parts)
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q lacks %q", err, p)
				}
			}
		})
	}
	// A negative filter value is out of range, and is not fed to the
	// capacity arithmetic ("lower ppo_mini_batch_size to at most -64").
	tr, err := Load("base", []string{"actor_rollout_ref.rollout.rollout_filter_value=-0.5"})
	if err != nil {
		t.Fatal(err)
	}
	err = Validate(tr)
	if err == nil || !strings.Contains(err.Error(), "rollout_filter_value: -0.5 is out of range") || strings.Contains(err.Error(), "at most -") {
		t.Errorf("got %v", err)
	}
	if n := strings.Count(err.Error(), "rollout_filter_value"); n != 1 {
		t.Errorf("rollout_filter_value reported %d times: %v", n, err)
	}
}

// Decoding into Go structs: a float for an int field was truncated
// (2.7 -> 2) and a bad bool's error named no key.
func TestDecodeScalarKinds(t *testing.T) {
	type inner struct {
		Steps int  `yaml:"steps"`
		On    bool `yaml:"on"`
	}
	type cfg struct {
		T inner   `yaml:"trainer"`
		L []int   `yaml:"list"`
		F float64 `yaml:"f"`
	}
	for _, tc := range []struct {
		ov   []string
		want string
	}{
		{[]string{"trainer.steps=2.7"}, "config: trainer.steps: want an integer, found float 2.7"},
		{[]string{"trainer.steps=inf"}, "config: trainer.steps: want an integer, found float .inf"},
		{[]string{"trainer.on=yes"}, `config: trainer.on: want true or false, found string "yes" (YAML 1.2`},
		{[]string{"trainer.on=1"}, "config: trainer.on: want true or false, found int 1"},
		{[]string{"list=[1,2.5]"}, "config: list[1]: want an integer, found float 2.5"},
	} {
		tr, err := parseTestTree(tc.ov)
		if err != nil {
			t.Fatal(err)
		}
		var c cfg
		for _, dec := range []func(string, any) error{tr.Decode, tr.DecodeLoose} {
			err := dec("", &c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: got %v, want %q", tc.ov, err, tc.want)
			}
		}
	}
	tr, err := parseTestTree([]string{"trainer.steps=3.0", "trainer.on=true", "f=1"})
	if err != nil {
		t.Fatal(err)
	}
	var c cfg
	if err := tr.Decode("", &c); err != nil || c.T.Steps != 3 || !c.T.On || c.F != 1 {
		t.Errorf("valid values: %+v, %v", c, err)
	}
}

func parseTestTree(ov []string) (*Tree, error) {
	base := "trainer: {steps: 1, on: false}\nlist: [1]\nf: 0.5\n"
	return Load("x", ov, WithFS(mapFS(map[string]string{"x.yaml": base})))
}

// Regression: --config-path to a missing folder was silently ignored.
func TestConfigPathMustExist(t *testing.T) {
	_, err := Load("base", nil, WithConfigPath("/nonexistent/ragen-configs"))
	if err == nil || !strings.Contains(err.Error(), "--config-path /nonexistent/ragen-configs") {
		t.Errorf("got %v", err)
	}
	if _, err := Load("base", nil, WithConfigPath(t.TempDir())); err != nil {
		t.Errorf("an existing empty folder falls back to the shipped configs: %v", err)
	}
}
