package all_test

import (
	"fmt"

	"ragen/env"
	_ "ragen/env/all"
)

// Importing the package for its side effect registers every env type, which
// env.Types then lists (upstream's types and ragen's own).
func Example() {
	types := env.Types()
	has := map[string]bool{}
	for _, t := range types {
		has[t] = true
	}
	fmt.Println(has["sokoban"], has["frozen_lake"], has["bandit"], has["webshop"], has["deepcoder"])
	// Output: true true true true true
}
