package alfworld_test

import (
	"fmt"

	"ragen/env/alfworld"
)

// Task and Admissible read what an ALFWorld observation says: the goal of
// the episode and the actions the simulator admits now.
func ExampleAdmissible() {
	obs := "You are in the middle of a room.\nYour task is to: put a clean mug in coffeemachine.\n" +
		"\nAdmissible actions: [go to countertop 1, take mug 1 from countertop 1, look]"
	fmt.Printf("%q\n", alfworld.Task(obs))
	fmt.Printf("%q\n", alfworld.Admissible(obs))
	// Output:
	// "put a clean mug in coffeemachine"
	// ["go to countertop 1" "take mug 1 from countertop 1" "look"]
}
