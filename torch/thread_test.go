package torch_test

import (
	"os"
	"sync"
	"testing"

	"ragen/internal/torch/csrc"
	"ragen/torch"
)

// Heavy calls (matmul, backward) run on the torch thread with the caller's
// grad mode: recorded outside NoGrad, not recorded inside it, whether the
// torch thread is on or off.
func TestTorchThreadGradMode(t *testing.T) {
	for _, on := range []bool{true, false} {
		prev := torch.SetTorchThread(on)
		s := torch.NewScope()
		w := s.Own(torch.From([]float32{1, 2, 3, 4}, 2, 2))
		if err := w.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		x := s.Own(torch.From([]float32{1, 1, 1, 1}, 2, 2))
		y := s.MatMul(x, w)
		var inside *torch.Tensor
		if err := torch.NoGrad(func() error { inside = s.MatMul(x, w); return s.Err() }); err != nil {
			t.Fatal(err)
		}
		if !y.RequiresGrad() || inside.RequiresGrad() {
			t.Fatalf("torch thread %v: requires grad outside NoGrad %v (want true), inside %v (want false)",
				on, y.RequiresGrad(), inside.RequiresGrad())
		}
		if !torch.GradEnabled() {
			t.Fatalf("torch thread %v: grad mode left off after NoGrad", on)
		}
		if err := s.Sum(y, false).Backward(nil); err != nil {
			t.Fatal(err)
		}
		g, err := w.Grad()
		if err != nil {
			t.Fatal(err)
		}
		gv := s.Float32s(s.Own(g, nil))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		// d sum(x w) / dw = x^T 1 = 2 everywhere
		for i, v := range gv {
			if v != 2 {
				t.Fatalf("torch thread %v: grad[%d] = %v, want 2", on, i, v)
			}
		}
		s.Close()
		torch.SetTorchThread(prev)
	}
}

// Many goroutines issuing heavy calls at once each get their own result.
func TestTorchThreadConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := torch.NewScope()
			defer s.Close()
			a := s.Own(torch.From([]float32{float32(g), 0, 0, float32(g)}, 2, 2))
			for range 50 {
				v := s.Float32s(s.MatMul(a, a))
				if s.Err() == nil && v[0] != float32(g*g) {
					errs <- s.Err()
					t.Errorf("goroutine %d: got %v, want %d", g, v[0], g*g)
					return
				}
			}
			if err := s.Err(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Ops big enough to open an OpenMP region, creation ops included, are
// re-issued on the torch thread (the shim defers them): same values with the
// torch thread on and off, and grad mode follows the caller.
func TestTorchThreadDeferredOps(t *testing.T) {
	var ref []float32
	prevDefer := csrc.SetDeferBigOps(true)
	defer csrc.SetDeferBigOps(prevDefer)
	for _, on := range []bool{false, true} {
		prev := torch.SetTorchThread(on)
		s := torch.NewScope()
		g, err := torch.NewGenerator(9, torch.CPU)
		if err != nil {
			t.Fatal(err)
		}
		x := s.Randn(g, []int64{300, 300}, torch.Float32, torch.CPU) // 90,000 elements: deferred
		g.Close()
		if err := x.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		// creation ops are deferred too (full, from_data)
		ramp := make([]float32, 300*300)
		for i := range ramp {
			ramp[i] = float32(i%17) / 17
		}
		before := csrc.Handoffs()
		c := s.Own(torch.From(ramp, 300, 300))
		f := s.Full([]int64{300, 300}, 0.25, torch.Float32, torch.CPU)
		if n := csrc.Handoffs() - before; on && n != 2 {
			t.Fatalf("from_data and full of 90,000 elements: %d handoffs to the torch thread, want 2", n)
		} else if !on && n != 0 {
			t.Fatalf("torch thread off: %d handoffs", n)
		}
		y := s.Softmax(s.Add(s.MulS(s.SiLU(x), 2), s.Add(x, s.Mul(c, f))), -1)
		z := s.Cat([]*torch.Tensor{y, s.Exp(x)}, 0)
		sum := s.Sum(s.Mean(z, false, 1), false)
		var off *torch.Tensor
		if err := torch.NoGrad(func() error { off = s.Exp(x); return s.Err() }); err != nil {
			t.Fatal(err)
		}
		v := s.Float32s(s.Narrow(s.Reshape(z, -1), 0, 0, 1000))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if !sum.RequiresGrad() || off.RequiresGrad() {
			t.Fatalf("torch thread %v: grad recorded %v outside NoGrad, %v inside", on, sum.RequiresGrad(), off.RequiresGrad())
		}
		if ref == nil {
			ref = v
		} else {
			for i := range v {
				if v[i] != ref[i] {
					t.Fatalf("element %d: %v with the torch thread, %v without", i, v[i], ref[i])
				}
			}
		}
		s.Close()
		torch.SetTorchThread(prev)
	}
}

// By default a big op from an ordinary goroutine runs on the torch thread,
// so no second OpenMP team forms (RAGEN_TORCH_THREAD=heavy turns it off).
func TestBigOpsOnTorchThreadByDefault(t *testing.T) {
	if v, ok := os.LookupEnv("RAGEN_TORCH_THREAD"); ok {
		t.Skipf("RAGEN_TORCH_THREAD=%q is set", v)
	}
	if !torch.SetTorchThread(true) {
		t.Fatal("the torch thread is off by default")
	}
	s := torch.NewScope()
	defer s.Close()
	before := csrc.Handoffs()
	x := s.Full([]int64{300, 300}, 0.5, torch.Float32, torch.CPU) // 90,000 elements
	_ = s.Exp(x)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if n := csrc.Handoffs() - before; n != 2 {
		t.Fatalf("full and exp of 90,000 elements: %d handoffs to the torch thread, want 2", n)
	}
}
