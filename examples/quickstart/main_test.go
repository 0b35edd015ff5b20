package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two steps train and export a model folder that loads back.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	if err := run(context.Background(), 1, dir, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "stopped: finished at step 1") || strings.Count("\n"+out.String(), "\nstep ") != 1 {
		t.Fatalf("unexpected output:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
}
