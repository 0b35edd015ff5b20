package search_test

import (
	"context"
	"fmt"

	"ragen/env/search"
)

// BM25 retrieval over a small corpus, and the answer score: an exact match
// earns the full reward, a partial one its token F1.
func ExampleBM25() {
	idx := search.NewBM25([]search.Doc{
		{ID: "1", Content: "Paris is the capital of France."},
		{ID: "2", Content: "Berlin is the capital of Germany."},
		{ID: "3", Content: "The Seine flows through Paris."},
	})
	docs, _ := idx.Retrieve(context.Background(), "capital of Germany", 1)
	fmt.Println(docs[0].ID)
	r, exact := search.Score("berlin", []string{"Berlin"}, 1, 0, 0.5)
	fmt.Println(r, exact)
	// Output:
	// 2
	// 1 true
}
