package torch

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// testDevice is the device named by RAGEN_TEST_DEVICE (default cpu); the GPU
// bundle (make gpu-bundle) runs the tests with RAGEN_TEST_DEVICE=cuda.
func testDevice(t *testing.T) Device {
	d, err := ParseDevice(os.Getenv("RAGEN_TEST_DEVICE"))
	require.NoError(t, err)
	if d != CPU && !CUDAAvailable() {
		t.Skipf("RAGEN_TEST_DEVICE=%s but this build has no CUDA (%s)", d, BuildInfo())
	}
	return d
}

// TestDeviceMatchesCPU runs a forward, backward and AdamW step on the test
// device and checks it against the same computation on the CPU.
func TestDeviceMatchesCPU(t *testing.T) {
	dev := testDevice(t)
	run := func(dev Device) (loss float64, w []float32) {
		s := NewScope()
		defer s.Close()
		W := s.To(s.Own(From(fill(12, 0.9, 0.2), 4, 3)), Float32, dev)
		require.NoError(t, W.SetRequiresGrad(true))
		Bs := s.To(s.Own(From(fill(3, 0.3, -0.1), 3)), Float32, dev)
		require.NoError(t, Bs.SetRequiresGrad(true))
		X := s.To(s.Own(From(fill(32, 0.7, 0.1), 8, 4)), Float32, dev)
		cfg := DefaultAdamW()
		cfg.WeightDecay = 0.1
		opt, err := NewAdamW([]*Tensor{W, Bs}, cfg)
		require.NoError(t, err)
		defer opt.Close()
		// three steps: the bias corrections and weight decay of each (on a
		// GPU, PyTorch's fused multi-tensor AdamW)
		var l *Tensor
		for range 3 {
			l = s.Mean(s.LogSoftmax(s.Add(s.MatMul(X, W), Bs), -1), false)
			require.NoError(t, s.Err())
			require.Equal(t, dev, l.Device())
			require.NoError(t, ZeroGrad([]*Tensor{W, Bs}))
			require.NoError(t, l.Backward(nil))
			require.NoError(t, opt.Step(0.01))
		}
		g, err := NewGenerator(3, dev)
		require.NoError(t, err)
		defer g.Close()
		idx := s.Multinomial(s.Softmax(s.Detach(W), -1), 1, true, g)
		require.Equal(t, dev, idx.Device())
		return s.Item(l), append(s.Float32s(W), s.Float32s(Bs)...)
	}
	l0, w0 := run(CPU)
	l1, w1 := run(dev)
	require.InDelta(t, l0, l1, 1e-5)
	for i := range w0 {
		require.InDelta(t, w0[i], w1[i], 1e-5)
	}
	if dev != CPU {
		require.Positive(t, CUDADeviceCount())
	}
}
