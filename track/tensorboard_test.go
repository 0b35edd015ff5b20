package track

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The decoder below shares no code with the writer: a bitwise CRC32C, a
// hand-written varint reader and a field walker over the Event proto
// (tensorflow/core/util/event.proto, summary.proto).

func crc32cBitwise(b []byte) uint32 {
	c := ^uint32(0)
	for _, x := range b {
		c ^= uint32(x)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0x82F63B78 // reversed Castagnoli polynomial
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

type tbValue struct {
	tag string
	v   float32
}

type tbEvent struct {
	wall        float64
	step        int64
	fileVersion string
	sessionLog  int // status; -1 when absent
	values      []tbValue
}

func readVarint(b []byte) (uint64, int, error) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("bad varint")
}

// fields calls fn for each (field number, wire type, payload) of a message.
// Varint payloads come back as the decoded number in num.
func fields(b []byte, fn func(field, wire int, num uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n, err := readVarint(b)
		if err != nil {
			return err
		}
		b = b[n:]
		field, wire := int(key>>3), int(key&7)
		switch wire {
		case 0:
			v, n, err := readVarint(b)
			if err != nil {
				return err
			}
			b = b[n:]
			if err := fn(field, wire, v, nil); err != nil {
				return err
			}
		case 1:
			if len(b) < 8 {
				return fmt.Errorf("short fixed64")
			}
			if err := fn(field, wire, 0, b[:8]); err != nil {
				return err
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return fmt.Errorf("short fixed32")
			}
			if err := fn(field, wire, 0, b[:4]); err != nil {
				return err
			}
			b = b[4:]
		case 2:
			l, n, err := readVarint(b)
			if err != nil {
				return err
			}
			b = b[n:]
			if uint64(len(b)) < l {
				return fmt.Errorf("short bytes field")
			}
			if err := fn(field, wire, 0, b[:l]); err != nil {
				return err
			}
			b = b[l:]
		default:
			return fmt.Errorf("unexpected wire type %d", wire)
		}
	}
	return nil
}

func decodeEvent(b []byte) (tbEvent, error) {
	ev := tbEvent{sessionLog: -1}
	err := fields(b, func(field, wire int, num uint64, data []byte) error {
		switch {
		case field == 1 && wire == 1:
			ev.wall = math.Float64frombits(binary.LittleEndian.Uint64(data))
		case field == 2 && wire == 0:
			ev.step = int64(num)
		case field == 3 && wire == 2:
			ev.fileVersion = string(data)
		case field == 6 && wire == 2:
			return fields(data, func(f, w int, num uint64, _ []byte) error {
				if f == 1 && w == 0 {
					ev.sessionLog = int(num)
				}
				return nil
			})
		case field == 5 && wire == 2:
			return fields(data, func(f, w int, _ uint64, val []byte) error {
				if f != 1 || w != 2 {
					return fmt.Errorf("summary field %d wire %d", f, w)
				}
				var v tbValue
				seen := 0
				err := fields(val, func(f, w int, _ uint64, d []byte) error {
					switch {
					case f == 1 && w == 2:
						v.tag = string(d)
						seen |= 1
					case f == 2 && w == 5:
						v.v = math.Float32frombits(binary.LittleEndian.Uint32(d))
						seen |= 2
					default:
						return fmt.Errorf("value field %d wire %d", f, w)
					}
					return nil
				})
				if seen != 3 {
					return fmt.Errorf("value without tag or simple_value")
				}
				ev.values = append(ev.values, v)
				return err
			})
		default:
			return fmt.Errorf("event field %d wire %d", field, wire)
		}
		return nil
	})
	return ev, err
}

func decodeEventFile(t *testing.T, path string) []tbEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []tbEvent
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("truncated record header")
		}
		n := binary.LittleEndian.Uint64(b[:8])
		if got, want := binary.LittleEndian.Uint32(b[8:12]), maskCRC(crc32cBitwise(b[:8])); got != want {
			t.Fatalf("length CRC %08x, want %08x", got, want)
		}
		if uint64(len(b)) < 16+n {
			t.Fatalf("truncated record")
		}
		data := b[12 : 12+n]
		if got, want := binary.LittleEndian.Uint32(b[12+n:16+n]), maskCRC(crc32cBitwise(data)); got != want {
			t.Fatalf("data CRC %08x, want %08x", got, want)
		}
		ev, err := decodeEvent(data)
		if err != nil {
			t.Fatalf("event %d: %v", len(evs), err)
		}
		evs = append(evs, ev)
		b = b[16+n:]
	}
	return evs
}

func TestCRC32CKnownValue(t *testing.T) {
	// CRC-32C check value from RFC 3720 (iSCSI): "123456789" -> 0xE3069283.
	if got := crc32cBitwise([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("test decoder CRC32C = %08x", got)
	}
	if got, want := MaskedCRC32C([]byte("123456789")), maskCRC(0xE3069283); got != want {
		t.Errorf("MaskedCRC32C = %08x, want %08x", got, want)
	}
}

func TestTensorBoardFile(t *testing.T) {
	dir := t.TempDir()
	now, advance := fakeClock()
	tb, err := OpenTensorBoard(dir, TensorBoardOptions{Now: now, Host: "node/1"})
	if err != nil {
		t.Fatal(err)
	}
	wantName := fmt.Sprintf("events.out.tfevents.%010d.node_1", now().Unix())
	if filepath.Base(tb.Path()) != wantName {
		t.Errorf("file %s, want %s", filepath.Base(tb.Path()), wantName)
	}
	steps := []map[string]float64{
		{"critic/score/mean": 0.5, "actor/entropy": 1.25},
		{"critic/score/mean": math.NaN(), "val-env/Sokoban/success": 0.1},
		{},
	}
	for i, m := range steps {
		advance(1500 * time.Millisecond)
		if err := tb.Log(300+i, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	evs := decodeEventFile(t, tb.Path())
	if len(evs) != 4 {
		t.Fatalf("%d events", len(evs))
	}
	t0 := float64(now().Add(-4500*time.Millisecond).UnixNano()) / 1e9
	if evs[0].fileVersion != "brain.Event:2" || evs[0].step != 0 || evs[0].wall != t0 || len(evs[0].values) != 0 {
		t.Errorf("first event %+v", evs[0])
	}
	for i, m := range steps {
		ev := evs[i+1]
		if ev.step != int64(300+i) {
			t.Errorf("event %d step %d", i+1, ev.step)
		}
		if want := t0 + 1.5*float64(i+1); math.Abs(ev.wall-want) > 1e-6 {
			t.Errorf("event %d wall %v, want %v", i+1, ev.wall, want)
		}
		if len(ev.values) != len(m) {
			t.Fatalf("event %d: %d values, want %d", i+1, len(ev.values), len(m))
		}
		for j, k := range sortedKeys(m) {
			v := ev.values[j]
			want := float32(m[k])
			if v.tag != k || (v.v != want && !(math.IsNaN(float64(want)) && math.IsNaN(float64(v.v)))) {
				t.Errorf("event %d value %d = %s:%v, want %s:%v", i+1, j, v.tag, v.v, k, want)
			}
		}
	}
}

func TestTensorBoardResume(t *testing.T) {
	dir := t.TempDir()
	now, _ := fakeClock()
	a, err := OpenTensorBoard(dir, TensorBoardOptions{Now: now, Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	// Same second, same host: a second file, not an overwrite.
	b, err := OpenTensorBoard(dir, TensorBoardOptions{Now: now, Host: "h", ResumeStep: 7})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if a.Path() == b.Path() || !strings.HasPrefix(filepath.Base(b.Path()), "events.out.tfevents.") {
		t.Fatalf("paths %s and %s", a.Path(), b.Path())
	}
	evs := decodeEventFile(t, b.Path())
	// file_version, then SessionLog{status: START(1)} at step 8 (purge_step).
	if len(evs) != 2 || evs[1].sessionLog != 1 || evs[1].step != 8 {
		t.Errorf("events %+v", evs)
	}
}

func TestTensorBoardErrors(t *testing.T) {
	if _, err := OpenTensorBoard("", TensorBoardOptions{}); err == nil {
		t.Error("empty dir accepted")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := OpenTensorBoard(filepath.Join(f, "sub"), TensorBoardOptions{}); err == nil {
		t.Error("directory under a file accepted")
	}
}

func TestTensorBoardPython(t *testing.T) {
	// An independent check with TensorFlow's reader, where installed.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := execQuiet(py, "-c", "import tensorboard"); err != nil {
		t.Skip("python3 has no tensorboard module (Debian ships none); the in-test decoder is the check")
	}
	dir := t.TempDir()
	tb, err := OpenTensorBoard(dir, TensorBoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb.Log(1, map[string]float64{"a/b": 0.5})
	tb.Log(2, map[string]float64{"a/b": 0.75})
	tb.Close()
	script := `import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
ea = EventAccumulator(sys.argv[1]); ea.Reload()
s = ea.Scalars("a/b")
assert [(e.step, e.value) for e in s] == [(1, 0.5), (2, 0.75)], s
`
	if err := execQuiet(py, "-c", script, dir); err != nil {
		t.Fatalf("tensorboard could not read the file: %v", err)
	}
}

func BenchmarkTensorBoardLog(b *testing.B) {
	tb, err := OpenTensorBoard(b.TempDir(), TensorBoardOptions{Host: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	m := map[string]float64{}
	for i := range 100 {
		m[fmt.Sprintf("metric/key_%03d", i)] = float64(i) / 7
	}
	for b.Loop() {
		if err := tb.Log(1, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100, "metrics/op")
}
