package env

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// ForEachLine calls fn with every non-blank line of r (surrounding white
// space trimmed), the way the env packages read their JSONL datasets. Lines
// may be up to maxLine bytes. An error from fn or from reading comes back
// as "line N: …" with N counted from 1.
func ForEachLine(r io.Reader, maxLine int, fn func(b []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64*1024, maxLine)), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := fn(b); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}
