package ragen

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/llm/tokenizer"
)

func readTrajRecords() []TrajectoryRecord {
	var recs []TrajectoryRecord
	for i := range 3 {
		recs = append(recs, TrajectoryRecord{
			CustomID: "traj_" + string(rune('0'+i)),
			Messages: []tokenizer.Message{{Role: "user", Content: "state"}, {Role: "assistant", Content: "Right"}},
			Metadata: TrajectoryMetadata{EnvID: i, GroupID: i / 2, NumTurns: 1, TotalReward: float64(i) / 2,
				Success: i == 2, Metrics: map[string]float64{"Line/success": float64(i / 2)}},
		})
	}
	return recs
}

func TestReadTrajectories(t *testing.T) {
	recs := readTrajRecords()
	var buf bytes.Buffer
	require.NoError(t, WriteJSONL(&buf, recs))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	// A blank line and a whitespace-only line are skipped; line numbers
	// count them.
	in := lines[0] + "\n\n" + lines[1] + "\n  \t\n" + lines[2] + "\n"

	var got []TrajectoryRecord
	var at []int
	require.NoError(t, ReadTrajectories(strings.NewReader(in), "x.jsonl", func(line int, rec TrajectoryRecord) error {
		at = append(at, line)
		got = append(got, rec)
		return nil
	}))
	assert.Equal(t, []int{1, 3, 5}, at)
	require.Len(t, got, 3)
	for i := range recs {
		assert.Equal(t, recs[i].CustomID, got[i].CustomID)
		assert.Equal(t, recs[i].Messages, got[i].Messages)
		assert.Equal(t, recs[i].Metadata, got[i].Metadata)
	}

	// StopReading ends early without an error; the next line is not parsed.
	n := 0
	require.NoError(t, ReadTrajectories(strings.NewReader(lines[0]+"\nnot json\n"), "", func(int, TrajectoryRecord) error {
		n++
		return StopReading
	}))
	assert.Equal(t, 1, n)

	// A bad line names the file and the line; the records before it were
	// delivered.
	n = 0
	err := ReadTrajectories(strings.NewReader(lines[0]+"\n\n{\"custom_id\": 1}\n"+lines[1]), "runs/x.jsonl", func(int, TrajectoryRecord) error {
		n++
		return nil
	})
	assert.ErrorContains(t, err, "runs/x.jsonl:3: ragen: trajectory record:")
	assert.Equal(t, 1, n)
	err = ReadTrajectories(strings.NewReader(`{"messages": []}`), "", func(int, TrajectoryRecord) error { return nil })
	assert.EqualError(t, err, "line 1: ragen: trajectory record: missing custom_id or metadata")

	// An error of fn comes back with its line, and errors.Is sees it.
	errFull := errors.New("disk full")
	err = ReadTrajectories(strings.NewReader(in), "x.jsonl", func(line int, _ TrajectoryRecord) error {
		if line == 3 {
			return errFull
		}
		return nil
	})
	assert.ErrorIs(t, err, errFull)
	assert.EqualError(t, err, "x.jsonl:3: disk full")

	// A read error names the line being read.
	errRead := errors.New("connection reset")
	err = ReadTrajectories(io.MultiReader(strings.NewReader(lines[0]+"\n"+lines[1]+"\n"), iotest.ErrReader(errRead)), "x.jsonl", func(int, TrajectoryRecord) error { return nil })
	assert.ErrorIs(t, err, errRead)
	assert.EqualError(t, err, "x.jsonl:3: connection reset")

	// A line over the limit is an error naming the limit, not a hang.
	defer func(old int) { maxTrajectoryLine = old }(maxTrajectoryLine)
	maxTrajectoryLine = 100
	err = ReadTrajectories(strings.NewReader(in), "x.jsonl", func(int, TrajectoryRecord) error { return nil })
	assert.EqualError(t, err, "x.jsonl:1: line longer than 100 bytes")

	// Empty input: no calls, no error.
	require.NoError(t, ReadTrajectories(strings.NewReader(""), "", func(int, TrajectoryRecord) error {
		t.Fatal("called")
		return nil
	}))
}
