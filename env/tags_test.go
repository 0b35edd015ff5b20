package env

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCopyIdentical(t *testing.T) {
	user, err := os.ReadFile(filepath.Join("..", "config", "envs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(user, embeddedTags) {
		t.Fatal("config/envs.yaml and env/envs.yaml differ; keep them identical")
	}
}

// The table of envs.md §0.4: tag -> type, max_actions_per_traj, max_tokens,
// parallel_friendly, max_workers.
func TestDefaultTagsTable(t *testing.T) {
	ts, err := DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		tag      string
		typ      string
		maxAct   int
		maxTok   int
		parallel bool
		workers  int
	}{
		{"SimpleSokoban", "sokoban", 10, 100, false, 32},
		{"LargerSokoban", "sokoban", 10, 100, false, 32},
		{"SokobanDifferentGridVocab", "sokoban", 10, 100, false, 32},
		{"CoordSokoban", "sokoban", 10, 120, false, 32},
		{"VisualSimpleSokoban", "sokoban", 10, 100, false, 32},
		{"Alfworld", "alfworld", 50, 512, false, 1},
		{"AlfworldOOD", "alfworld", 50, 512, false, 1},
		{"Countdown", "countdown", 1, 100, false, 32},
		{"Bandit", "bandit", 1, 100, false, 32},
		{"BanditTest", "bandit", 1, 100, false, 32},
		{"DeepCoder", "deepcoder", 1, 8000, true, 32},
		{"FrozenLake", "frozen_lake", 10, 100, false, 32},
		{"CoordFrozenLake", "frozen_lake", 10, 120, false, 32},
		{"MetamathQA", "metamathqa", 1, 100, false, 1},
		{"WebShop", "webshop", 9, 200, false, 1},
		{"WebShopFull", "webshop", 15, 200, false, 1},
		{"Lean", "lean", 30, 512, true, 32},
		{"SimpleSudoku", "sudoku", 20, 150, false, 32},
		{"MediumSudoku", "sudoku", 30, 150, false, 32},
		{"SearchQA", "search", 10, 300, true, 32},
		{"SearchQAMock", "search", 10, 300, true, 32},
		{"game_2048", "game_2048", 700, 8192, false, 1},
		{"rubikscube", "rubikscube", 20, 96, false, 1},
	}
	if len(ts) != len(want) {
		t.Errorf("%d tags, want %d: %v", len(ts), len(want), ts.Names())
	}
	for _, w := range want {
		tag, err := ts.Lookup(w.tag)
		if err != nil {
			t.Error(err)
			continue
		}
		if tag.Name != w.tag || tag.EnvType != w.typ || tag.MaxActionsPerTraj != w.maxAct ||
			tag.MaxTokens == nil || *tag.MaxTokens != w.maxTok || tag.ParallelFriendly != w.parallel || tag.MaxWorkers != w.workers {
			t.Errorf("%s = %+v, want %+v", w.tag, tag, w)
		}
	}
	// Spot checks of env_config and instruction text.
	sg := ts["SokobanDifferentGridVocab"].EnvConfig
	if sg["search_depth"] != 30 || sg["dim_x"] != 6 || sg["num_boxes"] != 1 {
		t.Errorf("SokobanDifferentGridVocab env_config = %v", sg)
	}
	if ts["Countdown"].EnvConfig != nil || ts["Lean"].EnvConfig != nil {
		t.Error("null env_config should decode to nil")
	}
	if got := ts["CoordSokoban"].EnvConfig["observation_format"]; got != "grid_coord" {
		t.Errorf("CoordSokoban observation_format = %v", got)
	}
	if ts["Bandit"].EnvInstruction != "" || ts["Bandit"].EnvConfig["split"] != "train" || ts["BanditTest"].EnvConfig["split"] != "test" {
		t.Error("Bandit tags wrong")
	}
	// Literal blocks keep the trailing spaces and end with a newline.
	if ins := ts["SimpleSokoban"].EnvInstruction; !strings.HasPrefix(ins, "You are solving the Sokoban puzzle. \nYou are the player") ||
		!strings.HasSuffix(ins, "<answer>Right || Right || Up</answer>\n") {
		t.Errorf("SimpleSokoban instruction = %q", ins)
	}
	if ins := ts["MetamathQA"].EnvInstruction; ins != "You are solving Math problems. " {
		t.Errorf("MetamathQA instruction = %q", ins)
	}
}

func TestParseTagsErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"no custom_envs", "foo: 1\n", []string{"no custom_envs"}},
		{"bad yaml", "custom_envs: [\n", []string{"parse tags"}},
		{"missing fields", "custom_envs:\n  A:\n    env_config: null\n", []string{"tag A: env_type is required", "tag A: max_actions_per_traj is required"}},
		{"not a mapping", "custom_envs:\n  A: 3\n", []string{"tag A: entry is not a mapping"}},
		{"wrong type", "custom_envs:\n  A:\n    env_type: x\n    max_actions_per_traj: many\n", []string{"tag A"}},
		{"zero actions", "custom_envs:\n  A:\n    env_type: x\n    max_actions_per_traj: 0\n", []string{"must be positive"}},
	}
	for _, tc := range tests {
		_, err := ParseTags([]byte(tc.yaml))
		if err == nil {
			t.Errorf("%s: want error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

func TestParseTagsDefaultsAndExtra(t *testing.T) {
	ts, err := ParseTags([]byte("custom_envs:\n  A:\n    env_type: x\n    max_actions_per_traj: 3\n    observation_format: coord\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := ts["A"]
	if a.MaxWorkers != 1 || a.ParallelFriendly || a.MaxTokens != nil || a.EnvInstruction != "" || a.EnvConfig != nil {
		t.Errorf("defaults: %+v", a)
	}
	if a.Extra["observation_format"] != "coord" {
		t.Errorf("extra: %v", a.Extra)
	}
	if _, err := ts.Lookup("a"); err == nil || !strings.Contains(err.Error(), `did you mean "A"`) {
		t.Errorf("Lookup error = %v", err)
	}
}

func TestLoadTags(t *testing.T) {
	ts, err := LoadTags(filepath.Join("..", "config", "envs.yaml"))
	if err != nil || len(ts) != 23 {
		t.Fatalf("LoadTags: %d tags, %v", len(ts), err)
	}
	if _, err := LoadTags("does/not/exist.yaml"); err == nil {
		t.Error("missing file: want error")
	}
}

func FuzzParseTags(f *testing.F) {
	f.Add(embeddedTags)
	f.Add([]byte("custom_envs:\n  A:\n    env_type: x\n    max_actions_per_traj: 3\n"))
	f.Add([]byte("custom_envs: 3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ParseTags(data)
		if err != nil {
			return
		}
		for name, tag := range ts {
			if tag.Name != name || tag.EnvType == "" || tag.MaxActionsPerTraj <= 0 {
				t.Fatalf("accepted invalid tag %q: %+v", name, tag)
			}
		}
	})
}
