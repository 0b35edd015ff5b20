package collapse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

func randMatrix(n int) Matrix {
	r := rand.New(rand.NewPCG(3, 4))
	m := Matrix{Col: make([]int, n)}
	for i := range n {
		l := make([]float64, n)
		s := make([]float64, n)
		for j := range l {
			l[j] = -r.Float64() * 3
			s[j] = 20 * l[j]
		}
		m.L, m.S = append(m.L, l), append(m.S, s)
		m.Col[i] = i
	}
	return m
}

// BenchmarkMatrixMetrics: an N×N cross matrix (one sample per group).
func BenchmarkMatrixMetrics(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		m := randMatrix(n)
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := MatrixMetrics(m, 1e-3, 0.9, EMA{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*n)*float64(b.N)/b.Elapsed().Seconds(), "cells/s")
		})
	}
}

// BenchmarkDetectorFirstTurn: the whole first-turn family with a free fake
// scorer, groups × 2 rows, 64-token reasonings.
func BenchmarkDetectorFirstTurn(b *testing.B) {
	for _, groups := range []int{10, 100, 1000} {
		var batch Batch
		for r := range 2 * groups {
			g := r / 2
			z := make([]int, 64)
			z[0] = g
			batch.GroupIDs = append(batch.GroupIDs, g)
			batch.FirstTurnPrompts = append(batch.FirstTurnPrompts, []int{g, 1, 2, 3})
			batch.FirstTurnReasoning = append(batch.FirstTurnReasoning, z)
		}
		c := DefaultConfig()
		c.MultiTurnEnabled = false
		c.NumSamples = AllSamples
		d, err := NewDetector(c, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			for b.Loop() {
				if _, err := d.Compute(context.Background(), batch, inputDriven, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
