package cli

import (
	"bufio"
	"fmt"
	"os"
	"strconv"

	"ragen/ragen"
)

// cmdView pretty-prints a trajectory JSONL file written by ragen eval.
func cmdView(args []string) error {
	fl, rest, err := splitFlags(args, "max")
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("usage: ragen view FILE.jsonl [--max N]")
	}
	limit := -1
	if v, ok := fl["max"]; ok {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return fmt.Errorf("--max %q: want a non-negative integer", v)
		}
	}
	fh, err := os.Open(rest[0])
	if err != nil {
		return err
	}
	defer fh.Close()
	if limit == 0 {
		return nil
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	n := 0
	return ragen.ReadTrajectories(fh, rest[0], func(_ int, rec ragen.TrajectoryRecord) error {
		if err := ragen.WriteTrajectoryText(w, rec); err != nil {
			return err
		}
		if n++; n == limit {
			return ragen.StopReading
		}
		return nil
	})
}
