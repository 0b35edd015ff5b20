package dist_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"ragen/dist"
	"ragen/torch"
)

// Init joins a process group; every rank of a real run calls it with its
// own Rank (ragen launch, torchrun or Slurm set them, dist.FromEnv reads
// them). A one-process group through a FileStore shows the calls.
func Example() {
	dir, _ := os.MkdirTemp("", "dist")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	g, err := dist.Init(ctx, dist.Config{Rank: 0, WorldSize: 1, StoreFile: filepath.Join(dir, "store")})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	s := torch.NewScope()
	defer s.Close()
	x := s.Full([]int64{3}, 2, torch.Float32, torch.CPU)
	if err := g.AllReduce(ctx, dist.Sum, x); err != nil {
		panic(err)
	}
	fmt.Println(g.Backend(), s.Item(s.Sum(x, false)))
	// Output:
	// gloo 6
}
