package sudoku_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/sudoku"
)

func ExampleParseAction() {
	p, _ := sudoku.ParseAction("place 5 at row 2 col 3", 9)
	fmt.Printf("%+v\n", p)
	p, _ = sudoku.ParseAction("2,3,5", 9) // no "place"/"at": row, col, num
	fmt.Printf("%+v\n", p)
	_, err := sudoku.ParseAction("place 5 at row 10 col 3", 9)
	fmt.Println(err)
	// Output:
	// {Row:1 Col:2 Num:5}
	// {Row:1 Col:2 Num:5}
	// Row 10 is out of range (1-9)
}

func ExampleNewFromPuzzle() {
	cfg := sudoku.DefaultConfig()
	cfg.GridSize = 4
	cfg.RenderFormat = "detailed"
	puzzle := [][]int{{1, 0, 3, 0}, {0, 4, 0, 2}, {2, 0, 0, 3}, {0, 3, 2, 0}}
	e, _ := sudoku.NewFromPuzzle(cfg, puzzle, nil) // solution found by the solver
	res, _ := e.Step(context.Background(), env.Action{Text: "place 2 at row 1 col 2"})
	fmt.Println(res.Reward, res.Done)
	fmt.Println(e.Render())
	// Output:
	// 1 false
	// ==================================================
	// SUDOKU PUZZLE
	// ==================================================
	// [1] 2 | [3] .
	//  . [4]|  . [2]
	// -------------
	// [2] . |  . [3]
	//  . [3]| [2] .
	//
	// Legend: [N]=initial cell, N=user-placed, *N*=conflict, .=empty
	//
	// ✓ Correct! Placed 2 at (1,2)
}

func ExampleCountSolutions() {
	puzzle := [][]int{{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}
	fmt.Println(sudoku.CountSolutions(puzzle, 1000))
	// Output: 72
}
