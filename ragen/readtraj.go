package ragen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxTrajectoryLine is the longest JSONL line ReadTrajectories accepts
// (1 GiB; a variable for the test).
var maxTrajectoryLine = 1 << 30

// StopReading, returned by the callback of ReadTrajectories, ends the read
// early without an error.
var StopReading = errors.New("ragen: stop reading trajectories")

// ReadTrajectories reads JSONL trajectory records (the lines WriteJSONL
// writes) from r and calls fn with the 1-based line number and the record
// of each non-blank line, in order. It stops at the first error: a line
// that does not parse, a line longer than 1 GiB, a read error
// or an error from fn, each returned as "name:line: error" ("line N:
// error" when name is empty), with the cause kept for errors.Is and
// errors.As. When fn returns StopReading, ReadTrajectories returns nil.
func ReadTrajectories(r io.Reader, name string, fn func(line int, rec TrajectoryRecord) error) error {
	at := func(line int, err error) error {
		if name == "" {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fmt.Errorf("%s:%d: %w", name, line, err)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, maxTrajectoryLine)), maxTrajectoryLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		rec, err := ParseTrajectoryRecord(b)
		if err == nil {
			err = fn(line, rec)
		}
		if errors.Is(err, StopReading) {
			return nil
		}
		if err != nil {
			return at(line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes", maxTrajectoryLine)
		}
		return at(line+1, err)
	}
	return nil
}
