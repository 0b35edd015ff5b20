package deepcoder_test

import (
	"fmt"

	"ragen/env/deepcoder"
)

// Program assembles the text the sandbox runs from a problem's starter code
// and the model's answer, as upstream does: a bare function answer to a
// LeetCode-style starter is indented into its class.
func ExampleProgram() {
	starter := "class Solution:\n    def add(self, a, b):\n"
	fmt.Println(deepcoder.Program(starter, "def add(self, a, b):\n    return a + b\n"))
	// Output:
	// class Solution:
	//     def add(self, a, b):
	//
	//     def add(self, a, b):
	//         return a + b
}
