package rule_test

import (
	"errors"
	"fmt"

	"ragen/config/rule"
)

// A package states its keys' rules as Problems; package config (or any
// caller) collects them from the joined error.
func Example() {
	err := errors.Join(
		rule.Unknown("algorithm.adv_estimator", "grp", []string{"gae", "grpo", "rloo"}),
		rule.AtLeast("trainer.total_training_steps", 0, 1),
	)
	ps, _ := rule.Problems(err)
	for _, p := range ps {
		fmt.Println(p.Error())
	}
	// Output:
	// config: algorithm.adv_estimator: unknown value "grp" (did you mean grpo?); valid: gae, grpo, rloo
	// config: trainer.total_training_steps: 0 is out of range: want >= 1
}
