package bridgetest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Root is the repository root (found from this file's location).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start runs the bridge with python3 and returns its base URL; the bridge
// is killed when the test ends. It skips the test when python3 (or, with
// needYAML, PyYAML) is missing.
func Start(t testing.TB, needYAML bool) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the simulator bridge cannot run")
	}
	if needYAML && exec.Command(py, "-c", "import yaml").Run() != nil {
		t.Skip("PyYAML missing (apt-get install python3-yaml): the alfworld bridge cannot run")
	}
	root := Root()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, py, filepath.Join(root, "scripts", "envbridge.py"), "--port", "0")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "scripts", "testdata", "fakesim"), "PYTHONDONTWRITEBYTECODE=1",
		"ALFWORLD_DATA="+filepath.Join(root, "scripts", "testdata", "fakesim"), "RAGEN_ENV_TOKEN=")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		i := strings.Index(l, "http://")
		if !ok || i < 0 {
			t.Fatalf("bridge did not start: %q", l)
		}
		return l[i:]
	case <-time.After(20 * time.Second):
		t.Fatal("bridge did not start within 20 s")
	}
	return ""
}
