package torch_test

import (
	"errors"
	"fmt"

	"ragen/torch"
)

// Ops run on a scope that owns every intermediate; the first failure sticks
// and is checked once.
func ExampleScope() {
	s := torch.NewScope()
	defer s.Close() // frees every tensor made on s
	x := s.Own(torch.From([]float32{1, 2, 3, 4}, 2, 2))
	y := s.Sum(s.Mul(x, x), false) // 1 + 4 + 9 + 16
	p := s.Softmax(x, -1)          // row-wise
	fmt.Println(s.Item(y), s.Float32s(p)[0] < 0.5)
	bad := s.MatMul(x, s.Own(torch.From([]float32{1, 2, 3}, 3, 1))) // (2,2)@(3,1)
	fmt.Println(bad == nil, s.Err() != nil)
	var te *torch.Error
	fmt.Println(errors.As(s.Err(), &te), te.Op)
	// Output:
	// 30 true
	// true true
	// true matmul
}

// Autograd and AdamW: fit y = 3x with one weight.
func ExampleAdamW() {
	w, _ := torch.From([]float32{0}, 1)
	defer w.Free()
	_ = w.SetRequiresGrad(true)
	cfg := torch.DefaultAdamW()
	cfg.LR, cfg.WeightDecay = 0.1, 0
	opt, _ := torch.NewAdamW([]*torch.Tensor{w}, cfg)
	defer opt.Close()
	for step := 0; step < 200; step++ {
		s := torch.NewScope()
		x := s.Own(torch.From([]float32{1, 2, 3}, 3))
		loss := s.Mean(s.Square(s.Sub(s.Mul(x, w), s.MulS(x, 3))), false) // mean((w·x − 3x)²)
		if err := s.Err(); err != nil {
			panic(err)
		}
		_ = torch.ZeroGrad([]*torch.Tensor{w})
		_ = loss.Backward(nil)
		_ = opt.Step(cfg.LR)
		s.Close()
	}
	v, _ := torch.Data[float32](w)
	fmt.Printf("w = %.2f\n", v[0])
	// Output: w = 3.00
}

// Devices and dtypes parse from the strings configs use; the zero values
// are the CPU and float32.
func ExampleParseDevice() {
	d, _ := torch.ParseDevice("cuda:1")
	t, _ := torch.ParseDType("bf16")
	var zd torch.Device
	var zt torch.DType
	fmt.Println(d, d.IsCUDA(), t, zd, zt)
	// Output: cuda:1 true bfloat16 cpu float32
}

// NoGrad runs inference without recording the autograd graph.
func ExampleNoGrad() {
	w, _ := torch.From([]float32{2}, 1)
	defer w.Free()
	_ = w.SetRequiresGrad(true)
	_ = torch.NoGrad(func() error {
		s := torch.NewScope()
		defer s.Close()
		y := s.Mul(w, w)
		fmt.Println(s.Item(y), y.RequiresGrad())
		return s.Err()
	})
	// Output: 4 false
}
