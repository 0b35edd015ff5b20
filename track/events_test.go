package track

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadEventsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	now, advance := fakeClock()
	// A killed run logged steps 1..4; the resumed run (checkpoint 2) logs 3, 4.
	a, err := OpenTensorBoard(dir, TensorBoardOptions{Now: now, Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 4; s++ {
		a.Log(s, map[string]float64{"r": float64(s), "nan": math.NaN()})
	}
	a.Close()
	advance(time.Second)
	b, err := OpenTensorBoard(dir, TensorBoardOptions{Now: now, Host: "h", ResumeStep: 2})
	if err != nil {
		t.Fatal(err)
	}
	for s := 3; s <= 4; s++ {
		b.Log(s, map[string]float64{"r": 10 * float64(s)})
	}
	b.Close()
	// Concatenate the two files in time order, as TensorBoard reads a run.
	x, _ := os.ReadFile(a.Path())
	y, _ := os.ReadFile(b.Path())
	recs, err := DecodeEvents(bytes.NewReader(append(x, y...)))
	if err != nil {
		t.Fatal(err)
	}
	// The START at step 3 purges the killed run's 3 and 4.
	want := []struct {
		step int
		r    float64
	}{{1, 1}, {2, 2}, {3, 30}, {4, 40}}
	if len(recs) != len(want) {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for i, w := range want {
		if recs[i].Step != w.step || recs[i].Data["r"] != w.r {
			t.Errorf("record %d = %+v, want step %d r %v", i, recs[i], w.step, w.r)
		}
	}
	if !math.IsNaN(recs[0].Data["nan"]) {
		t.Error("NaN simple_value lost")
	}
	// Torch writes one event per scalar: same-step events merge.
	var buf []byte
	buf = AppendTFRecord(buf, AppendScalarEvent(nil, now(), 5, map[string]float64{"a": 1}))
	buf = AppendTFRecord(buf, AppendScalarEvent(nil, now(), 5, map[string]float64{"b": 2}))
	recs, err = DecodeEvents(bytes.NewReader(buf))
	if err != nil || len(recs) != 1 || recs[0].Data["a"] != 1 || recs[0].Data["b"] != 2 {
		t.Errorf("merge: %+v %v", recs, err)
	}
	// ReadEvents on a file.
	recs, err = ReadEvents(b.Path())
	if err != nil || len(recs) != 2 {
		t.Errorf("ReadEvents: %+v %v", recs, err)
	}
}

func TestDecodeEventsErrors(t *testing.T) {
	good := AppendTFRecord(nil, AppendScalarEvent(nil, time.Unix(1, 0), 1, map[string]float64{"a": 1}))
	// Torn tail: fine.
	recs, err := DecodeEvents(bytes.NewReader(append(append([]byte{}, good...), good[:len(good)-3]...)))
	if err != nil || len(recs) != 1 {
		t.Errorf("torn tail: %v %v", recs, err)
	}
	cases := map[string]func([]byte){
		"length checksum": func(b []byte) { b[8] ^= 1 },
		"data checksum":   func(b []byte) { b[14] ^= 1 },
	}
	for name, corrupt := range cases {
		b := append([]byte{}, good...)
		corrupt(b)
		if _, err := DecodeEvents(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// A valid frame around bytes that are not a protobuf.
	bad := AppendTFRecord(nil, []byte{0x0a, 0x05, 0x01})
	if _, err := DecodeEvents(bytes.NewReader(bad)); err == nil {
		t.Error("malformed proto accepted")
	}
	if _, err := ReadEvents(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("missing file accepted")
	}
}

func FuzzDecodeEvents(f *testing.F) {
	ev := AppendScalarEvent(nil, time.Unix(1, 0), 3, map[string]float64{"a": 1, "b": math.NaN()})
	f.Add(AppendTFRecord(nil, ev))
	f.Add(AppendTFRecord(AppendTFRecord(nil, ev), []byte{0x10, 0x02, 0x32, 0x02, 0x08, 0x01}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a file, and as one correctly framed record so that the proto
		// parser sees the mutations the checksums would otherwise reject.
		for _, in := range [][]byte{data, AppendTFRecord(nil, data)} {
			recs, err := DecodeEvents(bytes.NewReader(in))
			if err != nil {
				continue
			}
			for _, r := range recs {
				if r.Step < 0 || r.Data == nil {
					t.Fatalf("bad record %+v", r)
				}
			}
		}
	})
}
