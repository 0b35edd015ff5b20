package sokoban

import (
	"reflect"
	"testing"
)

func TestSolve(t *testing.T) {
	tests := []struct {
		name     string
		room     []string
		maxDepth int
		want     []int
		ok       bool
	}{
		// Push right once.
		{"one push", []string{"#####", "#@$.#", "#####"}, 100, []int{4}, true},
		// Box (2,2) to target (3,1): Right to (1,2), push Down (box to
		// (3,2)), Right, Down to (3,3), push Left (box to (3,1)) = 5 steps;
		// pushing left first needs 7.
		{"walk around", []string{"######", "#@   #", "# $  #", "#.   #", "######"}, 100, []int{4, 2, 4, 2, 3}, true},
		{"depth limit", []string{"######", "#@   #", "# $  #", "#.   #", "######"}, 4, nil, false},
		// A box in a corner can never move.
		{"dead corner", []string{"#####", "#$ .#", "# @ #", "#####"}, 100, nil, false},
		{"already solved", []string{"#####", "#@* #", "#####"}, 100, []int{}, true},
		// Two boxes: push the top one on (Right), walk Left, Down, then
		// push the bottom one (Right) = 4; doing the bottom first takes 5.
		{"two boxes", []string{"#######", "#@$.  #", "# $.  #", "#######"}, 100, []int{4, 3, 2, 4}, true},
		// Boxes side by side cannot be pushed together.
		{"box behind box", []string{"########", "#@$$..##", "########"}, 100, nil, false},
	}
	for _, tc := range tests {
		got, ok, err := Solve(mustRoom(t, tc.room...), tc.maxDepth, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Solve = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSolveStateLimitAndErrors(t *testing.T) {
	r := mustRoom(t, "######", "#@   #", "# $  #", "#.   #", "######")
	if _, ok, _ := Solve(r, 100, 3); ok {
		t.Error("state limit 3: want no solution")
	}
	if _, _, err := Solve(Room{Rows: 1, Cols: 1, Fixed: []int8{1}, State: []int8{5}}, 10, 0); err == nil {
		t.Error("room without boxes: want error")
	}
}
