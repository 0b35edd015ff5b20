package track

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// Record is one step of a metrics file.
type Record struct {
	Step int
	Data map[string]float64 // NaN where the file has null
}

// JSONL is the "file"/"jsonl" backend. Each Log appends one line
//
//	{"step":3,"data":{"actor/entropy":1.25,"critic/score/mean":null}}
//
// (veRL FileLogger's shape; keys sorted; numbers as Python's repr(float);
// NaN and ±Inf as null, as orjson writes them) with a single write, so a
// crash loses at most the line being written.
type JSONL struct {
	f    *os.File
	path string
	buf  []byte
}

// OpenJSONL opens the metrics file at path, creating its directory. With
// resumeStep 0 the file starts empty (a fresh run, as veRL opens it with
// "w"). With resumeStep > 0 records after resumeStep are dropped (Truncate)
// and new records are appended.
func OpenJSONL(path string, resumeStep int) (*JSONL, error) {
	if path == "" {
		return nil, errors.New("track: jsonl: empty path")
	}
	if resumeStep < 0 {
		return nil, fmt.Errorf("track: jsonl: negative resume step %d", resumeStep)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("track: jsonl: %w", err)
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if resumeStep > 0 {
		if err := Truncate(path, resumeStep); err != nil {
			return nil, err
		}
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("track: jsonl: %w", err)
	}
	return &JSONL{f: f, path: path}, nil
}

// Path returns the file's path.
func (j *JSONL) Path() string { return j.path }

// Log appends the step's record.
func (j *JSONL) Log(step int, metrics map[string]float64) error {
	if j.f == nil {
		return ErrClosed
	}
	j.buf = AppendRecord(j.buf[:0], step, metrics)
	j.buf = append(j.buf, '\n')
	if _, err := j.f.Write(j.buf); err != nil {
		return fmt.Errorf("track: jsonl: step %d: %w", step, err)
	}
	return nil
}

// Resumed keeps only the records up to step, the step a trainer actually
// resumed from (an older one than the file's newest after a resume_path or
// a corrupt newest checkpoint; 0 when it started afresh), so that the
// steps logged next do not repeat.
func (j *JSONL) Resumed(step int) error {
	if j.f == nil {
		return ErrClosed
	}
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("track: jsonl: %w", err)
	}
	j.f = nil
	if step <= 0 { // a fresh start: nothing of an earlier run stays (step 0's validation included)
		if err := os.Truncate(j.path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("track: jsonl: %w", err)
		}
	} else if err := Truncate(j.path, step); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("track: jsonl: %w", err)
	}
	j.f = f
	return nil
}

// Close closes the file.
func (j *JSONL) Close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if err != nil {
		return fmt.Errorf("track: jsonl: %w", err)
	}
	return nil
}

// AppendRecord appends the JSON object for one step (without a newline).
func AppendRecord(b []byte, step int, metrics map[string]float64) []byte {
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, `,"data":{`...)
	for i, k := range sortedKeys(metrics) {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k) // a string always marshals
		b = append(b, kb...)
		b = append(b, ':')
		v := metrics[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
		} else {
			b = appendPyFloat(b, v)
		}
	}
	return append(b, "}}"...)
}

// ReadJSONL reads a metrics file written by JSONL (or veRL's FileLogger).
func ReadJSONL(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("track: %w", err)
	}
	defer f.Close()
	recs, err := DecodeJSONL(f)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return recs, nil
}

// DecodeJSONL reads records, one JSON object per line, in file order.
//
// Each line is {"step": N, "data": {key: value}}. Numeric values are kept;
// null becomes NaN; Python's NaN, Infinity and -Infinity tokens (json.dumps
// writes them) are accepted; strings, booleans, lists and objects are
// skipped. Blank lines are ignored. A final line without a newline that does
// not parse is a torn write of a killed run and is ignored; any other bad
// line is an error naming its line number.
func DecodeJSONL(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	var recs []Record
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return recs, fmt.Errorf("track: jsonl: line %d: %w", lineNo, err)
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if len(bytes.TrimSpace(line)) > 0 {
			rec, perr := parseRecord(line)
			switch {
			case perr == nil:
				recs = append(recs, rec)
			case !complete:
				// torn final line
			default:
				return recs, fmt.Errorf("track: jsonl: line %d: %w", lineNo, perr)
			}
		}
		if err == io.EOF {
			return recs, nil
		}
	}
}

type rawRecord struct {
	Step json.RawMessage            `json:"step"`
	Data map[string]json.RawMessage `json:"data"`
}

func parseRecord(line []byte) (Record, error) {
	var raw rawRecord
	if err := json.Unmarshal(pyTokensToJSON(line), &raw); err != nil {
		return Record{}, err
	}
	if len(raw.Step) == 0 || string(raw.Step) == "null" {
		return Record{}, errors.New(`missing "step"`)
	}
	step, err := parseStep(string(raw.Step))
	if err != nil {
		return Record{}, err
	}
	rec := Record{Step: step, Data: make(map[string]float64, len(raw.Data))}
	for k, v := range raw.Data {
		v = bytes.TrimSpace(v)
		if len(v) == 0 {
			continue
		}
		switch c := v[0]; {
		case c == 'n': // null
			rec.Data[k] = math.NaN()
		case c == '-' || (c >= '0' && c <= '9'):
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil && !math.IsInf(f, 0) { // ±1e999 stands for ±Infinity
				return Record{}, fmt.Errorf("value of %q: %w", k, err)
			}
			rec.Data[k] = f
		}
	}
	return rec, nil
}

func parseStep(s string) (int, error) {
	if n, err := strconv.ParseInt(s, 10, 0); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("negative step %d", n)
		}
		return int(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, fmt.Errorf("step %s is not a non-negative integer", s)
	}
	return int(f), nil
}

// pyTokensToJSON rewrites Python's non-JSON number tokens outside strings:
// NaN -> null, Infinity -> 1e999, -Infinity -> -1e999 (ParseFloat turns the
// latter into ±Inf).
func pyTokensToJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out = append(out, "null"...)
			i += 2
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out = append(out, "1e999"...)
			i += 7
		default:
			out = append(out, c)
		}
	}
	return out
}

// Truncate drops every record with a step after afterStep from the metrics
// file at path, so a resumed run continues the file without the steps a
// killed run logged past its last checkpoint. A torn final line is dropped
// too. A missing file is not an error. The file is rewritten through a
// temporary file and a rename.
func Truncate(path string, afterStep int) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("track: truncate: %w", err)
	}
	var out []byte
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		i := bytes.IndexByte(data, '\n')
		var line []byte
		complete := i >= 0
		if complete {
			line, data = data[:i+1], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec, perr := parseRecord(line)
		if perr != nil {
			if !complete {
				break // torn write
			}
			return fmt.Errorf("track: truncate %s: line %d: %w", path, lineNo, perr)
		}
		if rec.Step <= afterStep {
			out = append(out, line...)
			if !complete {
				out = append(out, '\n')
			}
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("track: truncate: %w", err)
	}
	_, werr := tmp.Write(out)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("track: truncate: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("track: truncate: %w", err)
	}
	return nil
}
