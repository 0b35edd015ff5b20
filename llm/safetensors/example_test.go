package safetensors_test

import (
	"fmt"
	"os"
	"path/filepath"

	"ragen/llm/safetensors"
)

func Example() {
	dir, _ := os.MkdirTemp("", "st")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "model.safetensors")
	err := safetensors.Write(p, []safetensors.Tensor{
		{Name: "model.norm.weight", DType: "U8", Shape: []int64{2, 2}, Data: []byte{1, 2, 3, 4}},
	}, map[string]string{"format": "pt"})
	if err != nil {
		panic(err)
	}
	f, err := safetensors.Open(p)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	b, info, _ := f.Bytes("model.norm.weight")
	fmt.Println(info.DType, info.Shape, b, f.Header.Metadata["format"])
	// Output: U8 [2 2] [1 2 3 4] pt
}
