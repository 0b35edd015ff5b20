package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// snappyDecode decodes one raw Snappy block (the format parquet uses for
// SNAPPY pages, not the framed stream format). maxLen bounds the declared
// output size.
func snappyDecode(src []byte, maxLen int) ([]byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return nil, errors.New("snappy: bad length header")
	}
	if n > uint64(maxLen) {
		return nil, fmt.Errorf("snappy: declared length %d exceeds %d", n, maxLen)
	}
	dst := make([]byte, 0, n)
	s := k
	for s < len(src) {
		tag := src[s]
		s++
		switch tag & 3 {
		case 0: // literal
			l := int(tag >> 2)
			if l >= 60 {
				nb := l - 59
				if s+nb > len(src) {
					return nil, errors.New("snappy: truncated literal length")
				}
				l = 0
				for i := 0; i < nb; i++ {
					l |= int(src[s+i]) << (8 * i)
				}
				s += nb
			}
			l++
			if l <= 0 || s+l > len(src) {
				return nil, errors.New("snappy: literal runs past the input")
			}
			if len(dst)+l > int(n) {
				return nil, errors.New("snappy: output longer than declared")
			}
			dst = append(dst, src[s:s+l]...)
			s += l
			continue
		case 1: // copy, 1-byte offset
			if s >= len(src) {
				return nil, errors.New("snappy: truncated copy")
			}
			l := 4 + int(tag>>2)&7
			off := int(tag>>5)<<8 | int(src[s])
			s++
			if err := snappyCopy(&dst, off, l, int(n)); err != nil {
				return nil, err
			}
		case 2: // copy, 2-byte offset
			if s+2 > len(src) {
				return nil, errors.New("snappy: truncated copy")
			}
			l := 1 + int(tag>>2)
			off := int(binary.LittleEndian.Uint16(src[s:]))
			s += 2
			if err := snappyCopy(&dst, off, l, int(n)); err != nil {
				return nil, err
			}
		case 3: // copy, 4-byte offset
			if s+4 > len(src) {
				return nil, errors.New("snappy: truncated copy")
			}
			l := 1 + int(tag>>2)
			off := int(binary.LittleEndian.Uint32(src[s:]))
			s += 4
			if err := snappyCopy(&dst, off, l, int(n)); err != nil {
				return nil, err
			}
		}
	}
	if len(dst) != int(n) {
		return nil, fmt.Errorf("snappy: got %d bytes, header says %d", len(dst), n)
	}
	return dst, nil
}

func snappyCopy(dst *[]byte, off, l, limit int) error {
	d := *dst
	if off <= 0 || off > len(d) {
		return fmt.Errorf("snappy: copy offset %d outside the %d bytes written", off, len(d))
	}
	if len(d)+l > limit {
		return errors.New("snappy: output longer than declared")
	}
	start := len(d) - off
	for i := 0; i < l; i++ { // byte by byte: the source may overlap the output
		d = append(d, d[start+i])
	}
	*dst = d
	return nil
}
