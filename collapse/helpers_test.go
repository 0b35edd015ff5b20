package collapse

import (
	"reflect"
	"testing"
)

// collapse.md §4: right padding, width at least 1, mask on real tokens.
func TestPadTokenBatch(t *testing.T) {
	for _, c := range []struct {
		in        [][]int
		pad       int
		ids, mask [][]int
	}{
		{[][]int{{5, 6, 7}, {8}, {}}, 0, [][]int{{5, 6, 7}, {8, 0, 0}, {0, 0, 0}}, [][]int{{1, 1, 1}, {1, 0, 0}, {0, 0, 0}}},
		{[][]int{{}, {}}, 9, [][]int{{9}, {9}}, [][]int{{0}, {0}}},
		{nil, 0, [][]int{}, [][]int{}},
	} {
		ids, mask := PadTokenBatch(c.in, c.pad)
		if !reflect.DeepEqual(ids, c.ids) || !reflect.DeepEqual(mask, c.mask) {
			t.Errorf("PadTokenBatch(%v, %d) = %v, %v; want %v, %v", c.in, c.pad, ids, mask, c.ids, c.mask)
		}
	}
}

// collapse.md §3: valid = rows with non-empty reasoning.
func TestValidReasoningIndices(t *testing.T) {
	if got := ValidReasoningIndices([][]int{{1}, {}, nil, {2, 3}}); !reflect.DeepEqual(got, []int{0, 3}) {
		t.Errorf("%v", got)
	}
	if got := ValidReasoningIndices([][]int{{}, nil}); got != nil {
		t.Errorf("%v", got)
	}
}

// collapse.md §5 "Logged names".
func TestPrefixMetrics(t *testing.T) {
	got := PrefixMetrics(FamilyFirstTurn, map[string]float64{"mi_estimate": 0.5, "retrieval_accuracy@2": 1})
	want := map[string]float64{"collapse_first_turn_sample/mi_estimate": 0.5, "collapse_first_turn_sample/retrieval_accuracy@2": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v", got)
	}
}
