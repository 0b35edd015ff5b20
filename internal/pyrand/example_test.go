package pyrand_test

import (
	"fmt"

	"ragen/internal/pyrand"
)

func ExampleNewRandom() {
	r := pyrand.NewRandom(42) // random.seed(42)
	fmt.Println(r.Random())
	// Output: 0.6394267984578837
}

func ExampleNewLegacy() {
	l, _ := pyrand.NewLegacy(0) // np.random.seed(0)
	fmt.Println(l.Rand())
	// Output: 0.5488135039273248
}

func ExampleNewGenerator() {
	g, _ := pyrand.NewGenerator(0) // np.random.default_rng(0)
	fmt.Println(g.Random())
	// Output: 0.6369616873214543
}
