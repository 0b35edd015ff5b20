package sudoku

import (
	"strings"
	"testing"
)

// A board with a given and a placed cell: the placed one can be cleared or
// overwritten, the given one cannot; bad boards name the problem.
func TestSetBoard(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GridSize = 4
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	puzzle := [][]int{{1, 2, 3, 4}, {3, 4, 1, 2}, {2, 1, 4, 3}, {0, 0, 0, 0}}
	placed := [][]int{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {4, 0, 0, 0}}
	if err := e.SetBoard(puzzle, placed); err != nil {
		t.Fatal(err)
	}
	if g := e.Grid(); g[3][0] != 4 || g[0][0] != 1 || g[3][1] != 0 {
		t.Fatalf("grid %v", g)
	}
	if e.Solution()[3][1] != 3 {
		t.Fatalf("solution %v", e.Solution())
	}
	bad := [][]int{{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}
	if err := e.SetBoard(puzzle, bad); err == nil || !strings.Contains(err.Error(), "given cell") {
		t.Fatalf("err = %v", err)
	}
	if err := e.SetBoard([][]int{{1, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, nil); err == nil {
		t.Fatal("unsolvable puzzle accepted")
	}
	if err := e.SetBoard([][]int{{1}}, nil); err == nil || !strings.Contains(err.Error(), "rows") {
		t.Fatalf("err = %v", err)
	}
}
