package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"ragen/llm/llmbench"
	"ragen/torch"
)

// Python is the interpreter that runs the PyTorch peers (Debian's
// python3-torch lives under /usr/bin/python3).
func Python() string {
	if p := os.Getenv("RAGEN_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// Peer2 is the command line that runs the second PyTorch peer, a PyTorch
// 2.x next to Debian bookworm's 1.13: RAGEN_PEER2, split on spaces (make
// bench sets it to the libtorch 2.x chroot's python3, "scripts/torch2.sh
// run python3"); nil when unset.
func Peer2() []string {
	return strings.Fields(os.Getenv("RAGEN_PEER2"))
}

// RunPeer runs a peer script from bench/ with args and decodes its JSON
// output (the last line of stdout) into out.
func RunPeer(dir, script string, out any, args ...string) error {
	return RunPeerWith([]string{Python()}, dir, script, out, args...)
}

// RunPeerWith is RunPeer with the interpreter's command line given (Peer2).
func RunPeerWith(python []string, dir, script string, out any, args ...string) error {
	if len(python) == 0 {
		return fmt.Errorf("bench: peer %s: no interpreter given", script)
	}
	argv := append(append(append([]string{}, python[1:]...), filepath.Join(dir, script)), args...)
	cmd := exec.Command(python[0], argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench: peer %s: %w\n%s", script, err, stderr.String())
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], out); err != nil {
		return fmt.Errorf("bench: peer %s printed no JSON result: %w", script, err)
	}
	return nil
}

// MatmulPeak measures fp32 GEMM throughput (FLOP/s) on an n x n product, the
// peak that MFU figures are reported against: the faster of libtorch's
// matmul (its BLAS) and a linear layer's product (oneDNN's sgemm where
// torch.OneDNNSgemm), so the peak is the best this process can do.
func MatmulPeak(n int) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := torch.NewScope()
	defer s.Close()
	g, err := torch.NewGenerator(0, torch.CPU)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	a := s.Randn(g, []int64{int64(n), int64(n)}, torch.Float32, torch.CPU)
	d := time.Duration(math.MaxInt64)
	for _, product := range []func(*torch.Scope) *torch.Tensor{
		func(in *torch.Scope) *torch.Tensor { return in.MatMul(a, a) },
		func(in *torch.Scope) *torch.Tensor { return in.Linear(a, a, nil) },
	} {
		one, err := llmbench.TimeStep(func() error {
			inner := torch.NewScope()
			product(inner)
			return inner.Close()
		}, 2, 5)
		if err != nil {
			return 0, err
		}
		d = min(d, one)
	}
	return 2 * float64(n) * float64(n) * float64(n) / d.Seconds(), s.Err()
}
