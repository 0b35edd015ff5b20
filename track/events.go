package track

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// ReadEvents reads the scalars of a TensorBoard event file (ours or torch's
// SummaryWriter's) as Records; see DecodeEvents.
func ReadEvents(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("track: %w", err)
	}
	defer f.Close()
	recs, err := DecodeEvents(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return recs, nil
}

// maxRecord bounds one TFRecord's length (TensorBoard scalar events are a
// few kilobytes).
const maxRecord = 64 << 20

// DecodeEvents reads TFRecord-framed Event protos and returns one Record per
// step with every Summary.Value that has a simple_value. Consecutive events
// of the same step (torch writes one per scalar) merge into one Record. A
// SessionLog START at step s drops the earlier records with step >= s, as
// TensorBoard purges them. Both checksums of every record are verified; a
// truncated final record (a killed writer) ends the input without error.
func DecodeEvents(r io.Reader) ([]Record, error) {
	var recs []Record
	var hdr [12]byte
	var data []byte
	for idx := 0; ; idx++ {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return recs, nil
			}
			return recs, fmt.Errorf("track: events: record %d: %w", idx, err)
		}
		n := binary.LittleEndian.Uint64(hdr[:8])
		if MaskedCRC32C(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]) {
			return recs, fmt.Errorf("track: events: record %d: length checksum mismatch", idx)
		}
		if n > maxRecord {
			return recs, fmt.Errorf("track: events: record %d: length %d over %d", idx, n, maxRecord)
		}
		if uint64(cap(data)) < n+4 {
			data = make([]byte, n+4)
		}
		data = data[:n+4]
		if _, err := io.ReadFull(r, data); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return recs, nil // torn tail
			}
			return recs, fmt.Errorf("track: events: record %d: %w", idx, err)
		}
		if MaskedCRC32C(data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
			return recs, fmt.Errorf("track: events: record %d: data checksum mismatch", idx)
		}
		ev, err := parseEvent(data[:n])
		if err != nil {
			return recs, fmt.Errorf("track: events: record %d: %w", idx, err)
		}
		if ev.start {
			kept := recs[:0]
			for _, rec := range recs {
				if int64(rec.Step) < ev.step {
					kept = append(kept, rec)
				}
			}
			recs = kept
		}
		if len(ev.values) == 0 {
			continue
		}
		if ev.step < 0 || ev.step > math.MaxInt32 {
			return recs, fmt.Errorf("track: events: record %d: step %d out of range", idx, ev.step)
		}
		if len(recs) > 0 && int64(recs[len(recs)-1].Step) == ev.step {
			for k, v := range ev.values {
				recs[len(recs)-1].Data[k] = v
			}
			continue
		}
		recs = append(recs, Record{Step: int(ev.step), Data: ev.values})
	}
}

type event struct {
	step   int64
	start  bool
	values map[string]float64
}

var errProto = errors.New("malformed protobuf")

// walk calls fn for every field of a protobuf message; for varint fields
// num holds the value, for the others data holds the payload.
func walk(b []byte, fn func(field int, wire int, num uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errProto
		}
		b = b[n:]
		field, wire := int(key>>3), int(key&7)
		var num uint64
		var data []byte
		switch wire {
		case 0:
			num, n = binary.Uvarint(b)
			if n <= 0 {
				return errProto
			}
			b = b[n:]
		case 1, 5:
			size := 8
			if wire == 5 {
				size = 4
			}
			if len(b) < size {
				return errProto
			}
			data, b = b[:size], b[size:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errProto
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return fmt.Errorf("%w: wire type %d", errProto, wire)
		}
		if err := fn(field, wire, num, data); err != nil {
			return err
		}
	}
	return nil
}

// parseEvent picks Event.step (2), Event.summary (5) simple values and
// Event.session_log (6) status START; other fields are skipped.
func parseEvent(b []byte) (event, error) {
	var ev event
	err := walk(b, func(field, wire int, num uint64, data []byte) error {
		switch {
		case field == 2 && wire == 0:
			ev.step = int64(num)
		case field == 6 && wire == 2:
			return walk(data, func(f, w int, num uint64, _ []byte) error {
				if f == 1 && w == 0 && num == 1 {
					ev.start = true
				}
				return nil
			})
		case field == 5 && wire == 2:
			return walk(data, func(f, w int, _ uint64, val []byte) error {
				if f != 1 || w != 2 {
					return nil
				}
				var tag string
				var v float64
				has := false
				err := walk(val, func(f, w int, _ uint64, d []byte) error {
					switch {
					case f == 1 && w == 2:
						tag = string(d)
					case f == 2 && w == 5:
						v = float64(math.Float32frombits(binary.LittleEndian.Uint32(d)))
						has = true
					}
					return nil
				})
				if err != nil {
					return err
				}
				if has {
					if ev.values == nil {
						ev.values = map[string]float64{}
					}
					ev.values[tag] = v
				}
				return nil
			})
		}
		return nil
	})
	return ev, err
}
