package config

import (
	"reflect"
	"strings"
	"testing"
)

type testRollout struct {
	Temperature float64 `yaml:"temperature"`
	TopK        int     `yaml:"top_k"`
	ValKwargs   struct {
		DoSample bool           `yaml:"do_sample"`
		TopP     float64        `yaml:"top_p"`
		Rest     map[string]any `yaml:",inline"`
	} `yaml:"val_kwargs"`
	Extra map[string]any `yaml:",inline"`
}

type testEnvManager struct {
	EnvGroups  int `yaml:"env_groups"`
	GroupSize  int `yaml:"group_size"`
	EnvConfigs struct {
		Tags    []string `yaml:"tags"`
		NGroups []int    `yaml:"n_groups"`
	} `yaml:"env_configs"`
}

type testAgent struct {
	MaxTurn    int    `yaml:"max_turn"`
	Sep        string `yaml:"action_sep"`
	Think      *bool  `yaml:"enable_think"`
	TestWindow `yaml:",inline"`
	Ignored    int `yaml:"-"`
}

type TestWindow struct {
	Window int `yaml:"max_context_window"`
}

func TestDecode(t *testing.T) {
	tr := mustLoad(t, "_1_bandit", nil, shipped())
	var em testEnvManager
	if err := tr.Decode("es_manager.val", &em); err != nil {
		t.Fatal(err)
	}
	want := testEnvManager{EnvGroups: 512, GroupSize: 1}
	want.EnvConfigs.Tags = []string{"Bandit", "BanditTest"}
	want.EnvConfigs.NGroups = []int{256, 256}
	if !reflect.DeepEqual(em, want) {
		t.Errorf("Decode = %+v, want %+v", em, want)
	}
	// A struct with an inline catch-all map accepts every key.
	var ro testRollout
	if err := tr.Decode("actor_rollout_ref.rollout", &ro); err != nil {
		t.Fatal(err)
	}
	if ro.Temperature != 1 || ro.TopK != -1 || !ro.ValKwargs.DoSample || ro.ValKwargs.TopP != 1 || ro.Extra["response_length"] != 500 {
		t.Errorf("rollout = %+v", ro)
	}
	// Maps decode too.
	var m map[string]int
	if err := tr.Decode("seed", &m); err != nil || m["train"] != 10000 || m["val"] != 123 {
		t.Errorf("seed = %v, %v", m, err)
	}
}

func TestDecodeUnknownKeys(t *testing.T) {
	files := map[string]string{"d.yaml": `
agent:
  max_turn: 3
  action_sep: "||"
  enable_think: false
  max_context_windw: 2
  extra_key: 1
  _ignored: 0
mgrs:
  - env_groups: 1
    group_size: 2
    env_configs: {tags: [A], n_groupz: [1]}
bad:
  max_turn: three
`}
	tr := mustLoad(t, "d", nil, WithFS(mapFS(files)))
	var a testAgent
	err := tr.Decode("agent", &a)
	wantErr(t, err, "agent.max_context_windw: unknown key for config.testAgent (did you mean agent.max_context_window?)",
		"agent.extra_key: unknown key", "agent._ignored: unknown key")
	var ms []testEnvManager
	err = tr.Decode("mgrs", &ms)
	wantErr(t, err, "mgrs[0].env_configs.n_groupz: unknown key", "did you mean mgrs[0].env_configs.n_groups?")
	err = tr.Decode("bad", &a)
	wantErr(t, err, "config: decode bad:", "three")
	wantErr(t, tr.Decode("agent", a), "non-nil pointer")
	wantErr(t, tr.Decode("nothere", &a), "nothere: key not found")

	// Fields with "-" are never filled; the rest decode.
	tr = mustLoad(t, "ok", nil, WithFS(mapFS(map[string]string{"ok.yaml": "max_turn: 3\naction_sep: '|'\nenable_think: false\nmax_context_window: 2\n"})))
	if err := tr.Decode("", &a); err != nil {
		t.Fatal(err)
	}
	if a.MaxTurn != 3 || a.Sep != "|" || a.Think == nil || *a.Think || a.Window != 2 {
		t.Errorf("decoded %+v", a)
	}
}

func TestDecodeFloatsAndNulls(t *testing.T) {
	tr := mustLoad(t, "base", nil, shipped())
	var opt struct {
		LR    float64        `yaml:"lr"`
		Betas []float64      `yaml:"betas"`
		Rest  map[string]any `yaml:",inline"`
	}
	if err := tr.Decode("actor_rollout_ref.actor.optim", &opt); err != nil {
		t.Fatal(err)
	}
	if opt.LR != 1e-6 || !reflect.DeepEqual(opt.Betas, []float64{0.9, 0.999}) {
		t.Errorf("optim = %+v", opt)
	}
	var tc struct {
		EnvGroups *int           `yaml:"gradient_analysis_env_groups"`
		Rest      map[string]any `yaml:",inline"`
	}
	if err := tr.Decode("trainer", &tc); err != nil || tc.EnvGroups != nil {
		t.Errorf("null -> nil pointer: %v %v", tc.EnvGroups, err)
	}
	if !strings.Contains(tr.YAML(), "lr: 1.0e-06") {
		t.Error("YAML must print floats as floats")
	}
}

func TestDecodeIntKeys(t *testing.T) {
	tr := mustLoad(t, "k", nil, WithFS(mapFS(map[string]string{"k.yaml": "lookup: {0: W, 1: '.', 12: G}\nnames: {1: Up}\n"})))
	var ints map[int]string
	if err := tr.Decode("lookup", &ints); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ints, map[int]string{0: "W", 1: ".", 12: "G"}) {
		t.Errorf("map[int]string = %v", ints)
	}
	var strs map[string]string
	if err := tr.Decode("names", &strs); err != nil || strs["1"] != "Up" {
		t.Errorf("map[string]string = %v, %v", strs, err)
	}
	if v, _ := tr.String("lookup.12"); v != "G" {
		t.Errorf("lookup.12 = %q", v)
	}
}

func TestDecodeLooseIgnoresOtherPackagesKeys(t *testing.T) {
	tr, err := Load("base", []string{"trainer.total_training_steps=7"})
	if err != nil {
		t.Fatal(err)
	}
	var dst struct {
		Trainer struct {
			Steps int `yaml:"total_training_steps"`
		} `yaml:"trainer"`
	}
	if err := tr.DecodeLoose("", &dst); err != nil {
		t.Fatal(err)
	}
	if dst.Trainer.Steps != 7 {
		t.Fatalf("steps = %d, want 7", dst.Trainer.Steps)
	}
	if err := tr.Decode("", &dst); err == nil {
		t.Fatal("strict Decode must reject the keys the struct lacks")
	}
	var bad struct {
		Trainer struct {
			Steps []string `yaml:"total_training_steps"`
		} `yaml:"trainer"`
	}
	if err := tr.DecodeLoose("", &bad); err == nil {
		t.Fatal("a type mismatch must still be an error")
	}
}
