package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"ragen/starpo/algo"
)

// The estimator by hand: a group of scores {0, 1, 5} has median 1, so the
// advantages are −1, 0, 4 on every masked token and 0 where the mask is 0.
func TestGroupMedianByHand(t *testing.T) {
	r, _ := algo.MatFromRows([][]float64{{0, 0}, {0, 1}, {5, 0}})
	m, _ := algo.MatFromRows([][]float64{{1, 1}, {1, 0}, {1, 1}})
	out, _, err := groupMedian(algo.AdvantageInput{Rewards: r, Mask: m, UIDs: []int{7, 7, 7}}, algo.AdvantageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{-1, -1}, {0, 0}, {4, 4}}
	for i, row := range out.Advantages.Rows() {
		for j := range row {
			if row[j] != want[i][j] {
				t.Fatalf("advantages %v, want %v", out.Advantages.Rows(), want)
			}
		}
	}
}

// The trainer selects the registered estimator by name and uses it on
// every step; the shaped rewards reach it.
func TestTrainsWithCustomEstimator(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), 1, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "group_median called 1 times") {
		t.Fatalf("estimator not used:\n%s", out.String())
	}
}
