package torch

import "testing"

// BenchmarkSampleQwenVocab draws one id for each of 16 rows of Qwen's
// 151,936 logits, one row at a time with its own generator (as a rollout
// with per-trajectory seeds does): ragen's Sample against the same draw
// done with ATen's softmax, multinomial (an exponential per id) and
// log-softmax, which Sample did before its exponential race (the ratio
// of the two is the speed-up). ragen-rows draws the 16 rows in one
// SampleRows call, in parallel.
func BenchmarkSampleQwenVocab(b *testing.B) {
	const B, V = 16, 151936
	s := NewScope()
	defer s.Close()
	g, err := NewGenerator(1, CPU)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	logits := s.Randn(g, []int64{B, V}, Float32, CPU)
	b.Run("ragen", func(b *testing.B) {
		for range b.N {
			c := NewScope()
			for r := range int64(B) {
				ids, lp := c.Sample(c.Narrow(logits, 0, r, 1), 1, 0, 1, g)
				c.Int64s(ids)
				c.Float32s(lp)
			}
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ragen-rows", func(b *testing.B) {
		gens := make([]*Generator, B)
		for i := range gens {
			gens[i] = g
		}
		for range b.N {
			c := NewScope()
			ids, lp := c.SampleRows(logits, 1, 0, 1, gens)
			c.Int64s(ids)
			c.Float32s(lp)
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aten-multinomial", func(b *testing.B) {
		for range b.N {
			c := NewScope()
			for r := range int64(B) {
				row := c.Narrow(logits, 0, r, 1)
				ids := c.Multinomial(c.Softmax(row, -1), 1, false, g)
				lp := c.Gather(c.LogSoftmax(row, -1), -1, ids)
				c.Int64s(ids)
				c.Float32s(lp)
			}
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
