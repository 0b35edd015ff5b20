package env

import (
	"errors"
	"strings"
	"testing"
)

// Blank lines are skipped but counted; errors name the line.
func TestForEachLine(t *testing.T) {
	var got []string
	err := ForEachLine(strings.NewReader("a\n\n  b  \nbad\nc"), 1024, func(b []byte) error {
		if string(b) == "bad" {
			return errors.New("no")
		}
		got = append(got, string(b))
		return nil
	})
	if err == nil || err.Error() != "line 4: no" || strings.Join(got, ",") != "a,b" {
		t.Fatalf("err %v, got %v", err, got)
	}
	err = ForEachLine(strings.NewReader("short\n"+strings.Repeat("x", 100)), 16, func([]byte) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") {
		t.Fatalf("long line: %v", err)
	}
}
