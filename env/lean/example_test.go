package lean_test

import (
	"fmt"

	"ragen/env/lean"
)

// SplitStatement cuts a formal statement as upstream does before a proof is
// sent to the Lean server: imports, the preamble, and the theorem itself.
func ExampleSplitStatement() {
	imports, preamble, body := lean.SplitStatement("import Mathlib\nopen Real\n\ntheorem t (x : ℝ) : x + 0 = x := by")
	fmt.Printf("imports:  %q\npreamble: %q\nbody:     %q\n", imports, preamble, body)
	// Output:
	// imports:  "import Mathlib"
	// preamble: "open Real"
	// body:     "theorem t (x : ℝ) : x + 0 = x := by"
}
