package track

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TensorBoardOptions configures OpenTensorBoard.
type TensorBoardOptions struct {
	// ResumeStep is the last completed step of a resumed run (0: fresh). A
	// SessionLog START event at step ResumeStep+1 makes TensorBoard discard
	// the earlier files' points from that step on (torch's purge_step).
	ResumeStep int
	Now        func() time.Time // wall_time clock, time.Now by default
	Host       string           // file name's host part, os.Hostname by default
}

// TensorBoard is the "tensorboard" backend. It writes one event file
// events.out.tfevents.<unix seconds>.<host> in TFRecord framing:
//
//	uint64 length (LE) | uint32 masked CRC32C(length) | data | uint32 masked CRC32C(data)
//
// The first record is Event{wall_time, file_version:"brain.Event:2"}; each
// Log writes one Event{wall_time, step, summary{value{tag, simple_value}...}}
// with the metrics in sorted key order (simple_value is a float32, as in
// TensorBoard), flushed to the file before Log returns.
type TensorBoard struct {
	f    *os.File
	path string
	now  func() time.Time
	buf  []byte
	ev   []byte
}

// EventFileVersion is the file_version of the first event.
const EventFileVersion = "brain.Event:2"

// OpenTensorBoard creates dir and a new event file in it.
func OpenTensorBoard(dir string, opt TensorBoardOptions) (*TensorBoard, error) {
	if dir == "" {
		return nil, errors.New("track: tensorboard: empty directory")
	}
	if opt.ResumeStep < 0 {
		return nil, fmt.Errorf("track: tensorboard: negative resume step %d", opt.ResumeStep)
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	host := opt.Host
	if host == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		host = h
	}
	host = strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("track: tensorboard: %w", err)
	}
	t0 := now()
	base := fmt.Sprintf("events.out.tfevents.%010d.%s", t0.Unix(), host)
	var f *os.File
	var name string
	// A second writer in the same second gets a numbered suffix rather than
	// clobbering the first file.
	for i := 0; ; i++ {
		name = filepath.Join(dir, base)
		if i > 0 {
			name = filepath.Join(dir, fmt.Sprintf("%s.%d", base, i))
		}
		var err error
		f, err = os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return nil, fmt.Errorf("track: tensorboard: %w", err)
		}
	}
	tb := &TensorBoard{f: f, path: name, now: now}
	ev := appendEventHeader(nil, t0, 0)
	ev = appendStringField(ev, 3, EventFileVersion)
	tb.buf = AppendTFRecord(tb.buf[:0], ev)
	if opt.ResumeStep > 0 {
		// Event{wall_time, step, session_log(6){status(1)=START(1)}}
		ev = appendEventHeader(ev[:0], t0, int64(opt.ResumeStep)+1)
		ev = appendBytesField(ev, 6, []byte{0x08, 0x01})
		tb.buf = AppendTFRecord(tb.buf, ev)
	}
	if _, err := f.Write(tb.buf); err != nil {
		f.Close()
		return nil, fmt.Errorf("track: tensorboard: %w", err)
	}
	return tb, nil
}

// Path returns the event file's path.
func (t *TensorBoard) Path() string { return t.path }

// Resumed writes a SessionLog START at step+1, so that TensorBoard drops
// the earlier runs' events from that step on (the trainer resumed from
// step; 0 when it started afresh).
func (t *TensorBoard) Resumed(step int) error {
	if t.f == nil {
		return ErrClosed
	}
	if step < 0 {
		return fmt.Errorf("track: tensorboard: negative resume step %d", step)
	}
	ev := appendEventHeader(nil, t.now(), int64(step)+1)
	ev = appendBytesField(ev, 6, []byte{0x08, 0x01})
	if _, err := t.f.Write(AppendTFRecord(nil, ev)); err != nil {
		return fmt.Errorf("track: tensorboard: %w", err)
	}
	return nil
}

// Log writes one Event with a simple_value per metric.
func (t *TensorBoard) Log(step int, metrics map[string]float64) error {
	if t.f == nil {
		return ErrClosed
	}
	t.ev = AppendScalarEvent(t.ev[:0], t.now(), int64(step), metrics)
	t.buf = AppendTFRecord(t.buf[:0], t.ev)
	if _, err := t.f.Write(t.buf); err != nil {
		return fmt.Errorf("track: tensorboard: step %d: %w", step, err)
	}
	return nil
}

// Close closes the event file.
func (t *TensorBoard) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	if err != nil {
		return fmt.Errorf("track: tensorboard: %w", err)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC32C is TFRecord's checksum: CRC32C rotated right by 15 bits plus
// 0xa282ead8.
func MaskedCRC32C(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// AppendTFRecord appends data framed as one TFRecord.
func AppendTFRecord(b, data []byte) []byte {
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], uint64(len(data)))
	b = append(b, hdr[:]...)
	b = binary.LittleEndian.AppendUint32(b, MaskedCRC32C(hdr[:]))
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, MaskedCRC32C(data))
}

// AppendScalarEvent appends an encoded Event proto holding one Summary with a
// simple_value per metric, in sorted key order.
func AppendScalarEvent(b []byte, wall time.Time, step int64, metrics map[string]float64) []byte {
	b = appendEventHeader(b, wall, step)
	var summary, value []byte
	for _, k := range sortedKeys(metrics) {
		value = appendStringField(value[:0], 1, k) // Summary.Value.tag
		value = appendTag(value, 2, 5)             // simple_value, fixed32
		value = binary.LittleEndian.AppendUint32(value, math.Float32bits(float32(metrics[k])))
		summary = appendBytesField(summary, 1, value) // Summary.value
	}
	return appendBytesField(b, 5, summary) // Event.summary
}

// appendEventHeader appends Event.wall_time (1, double) and, when non-zero,
// Event.step (2, int64).
func appendEventHeader(b []byte, wall time.Time, step int64) []byte {
	b = appendTag(b, 1, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(wall.UnixNano())/1e9))
	if step != 0 {
		b = appendTag(b, 2, 0)
		b = binary.AppendUvarint(b, uint64(step))
	}
	return b
}

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func appendBytesField(b []byte, field int, data []byte) []byte {
	b = appendTag(b, field, 2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func appendStringField(b []byte, field int, s string) []byte {
	b = appendTag(b, field, 2)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
