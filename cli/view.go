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
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for n := 1; sc.Scan(); n++ {
		if limit >= 0 && n > limit {
			break
		}
		rec, err := ragen.ParseTrajectoryRecord(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", rest[0], n, err)
		}
		if err := ragen.WriteTrajectoryText(w, rec); err != nil {
			return err
		}
	}
	return sc.Err()
}
