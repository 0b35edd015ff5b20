package env_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"ragen/env"
)

func ExampleFormatReward() {
	fmt.Println(env.FormatReward(0, true))         // no action executed: Python int 0
	fmt.Println(env.FormatReward(1, true))         // FrozenLake goal
	fmt.Println(env.FormatReward(0+-0.1+1, false)) // Sokoban push onto target
	fmt.Println(env.FormatReward(1e-05, false))    // scientific below 1e-4
	// Output:
	// 0
	// 1
	// 0.9
	// 1e-05
}

func ExampleDecodeConfig() {
	type config struct {
		MaxSteps    int     `yaml:"max_steps"`
		SuccessRate float64 `yaml:"success_rate"`
	}
	c := config{MaxSteps: 100, SuccessRate: 0.8} // defaults
	if err := env.DecodeConfig(map[string]any{"success_rate": 1}, &c); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c.MaxSteps, c.SuccessRate)
	err := env.DecodeConfig(map[string]any{"max_step": 5}, &c)
	fmt.Println(err)
	// Output:
	// 100 1
	// env config: unknown key "max_step" (did you mean "max_steps"?); valid keys: max_steps, success_rate
}

func ExampleScripted() {
	r := env.NewScripted([]float64{0.1}, []int{3})
	fmt.Println(r.Float64(), r.Intn(4))
	// Output: 0.1 3
}

func ExampleDefaultTags() {
	tags, err := env.DefaultTags()
	if err != nil {
		fmt.Println(err)
		return
	}
	t, _ := tags.Lookup("CoordSokoban")
	fmt.Println(t.EnvType, t.MaxActionsPerTraj, *t.MaxTokens, t.EnvConfig["observation_format"])
	_, err = tags.Lookup("CoordSokobn")
	fmt.Println(err != nil)
	// Output:
	// sokoban 10 120 grid_coord
	// true
}

// ForEachLine reads a JSONL dataset: blank lines are skipped, and an error
// names its line.
func ExampleForEachLine() {
	data := "{\"q\": \"2+2\"}\n\n{\"q\": \"3*3\"}\nnot json\n"
	err := env.ForEachLine(strings.NewReader(data), 1<<20, func(b []byte) error {
		var row struct{ Q string }
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		fmt.Println(row.Q)
		return nil
	})
	fmt.Println(err)
	// Output:
	// 2+2
	// 3*3
	// line 4: invalid character 'o' in literal null (expecting 'u')
}
