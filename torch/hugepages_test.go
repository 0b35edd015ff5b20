package torch

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnHugePages: tensors of 2 MiB or more made inside OnHugePages are
// counted in HugePageBytes until freed, hold what was written, work in ops
// and free cleanly; smaller ones and those made outside are not counted;
// RAGEN_HUGEPAGES=0 (rerun in a child) leaves the allocator alone.
func TestOnHugePages(t *testing.T) {
	off := os.Getenv("RAGEN_HUGEPAGES") == "0"
	base := HugePageBytes()
	var big, small *Tensor
	err := OnHugePages(func() error {
		var err error
		if big, err = Full([]int64{1 << 20}, 1.5, Float32, CPU); err != nil { // 4 MiB
			return err
		}
		small, err = Full([]int64{1000}, 2, Float32, CPU)
		return err
	})
	require.NoError(t, err)
	outside, err := Full([]int64{1 << 20}, 1, Float32, CPU)
	require.NoError(t, err)
	if off {
		require.Equal(t, base, HugePageBytes(), "RAGEN_HUGEPAGES=0 must map nothing")
	} else {
		require.Equal(t, base+4<<20, HugePageBytes(), "one 4 MiB mapping")
	}
	s := NewScope()
	sum := s.Float64s(s.Sum(s.Add(big, outside), false))
	require.NoError(t, s.Err())
	require.Equal(t, 2.5*(1<<20), sum[0])
	require.NoError(t, s.Close())
	big.Free()
	small.Free()
	outside.Free()
	require.Equal(t, base, HugePageBytes(), "freed")
	require.ErrorContains(t, OnHugePages(func() error { return errors.New("from f") }), "from f")
	if !off {
		inChild(t, "^TestOnHugePages$", "RAGEN_HUGEPAGES=0")
	}
}
