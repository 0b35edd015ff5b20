package track

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAppendRecord(t *testing.T) {
	got := string(AppendRecord(nil, 3, map[string]float64{
		"b": 1, "a": 0.25, "n": math.NaN(), "p": math.Inf(1), "m": math.Inf(-1), `q"x`: 1e-5,
	}))
	// Keys sorted; 1 -> "1.0" and 1e-5 -> "1e-05" (Python repr); NaN/±Inf -> null.
	want := `{"step":3,"data":{"a":0.25,"b":1.0,"m":null,"n":null,"p":null,"q\"x":1e-05}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "proj", "exp.jsonl")
	j, err := OpenJSONL(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := []map[string]float64{
		{"actor/entropy": 1.5, "critic/score/mean": math.NaN()},
		{"actor/entropy": 1.25, "x": math.Inf(1), "tiny": 5e-324, "big": 1.7976931348623157e308},
		{},
	}
	for i, m := range in {
		if err := j.Log(i+1, m); err != nil {
			t.Fatal(err)
		}
		// Flushed on every step: the file already holds i+1 lines.
		data, _ := os.ReadFile(path)
		if n := bytes.Count(data, []byte("\n")); n != i+1 {
			t.Fatalf("after step %d the file has %d lines", i+1, n)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Log(9, nil); err != ErrClosed {
		t.Errorf("Log after Close: %v", err)
	}
	recs, err := ReadJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.Step != i+1 {
			t.Errorf("record %d step %d", i, r.Step)
		}
		if len(r.Data) != len(in[i]) {
			t.Errorf("record %d: %d values, want %d", i, len(r.Data), len(in[i]))
		}
		for k, v := range in[i] {
			got, ok := r.Data[k]
			switch {
			case !ok:
				t.Errorf("step %d: %s missing", r.Step, k)
			case math.IsNaN(v) || math.IsInf(v, 0):
				if !math.IsNaN(got) { // null reads back as NaN
					t.Errorf("step %d: %s = %v, want NaN", r.Step, k, got)
				}
			case got != v:
				t.Errorf("step %d: %s = %v, want %v (exact round trip)", r.Step, k, got, v)
			}
		}
	}
}

func TestDecodeJSONL(t *testing.T) {
	// veRL json.dumps output (spaces, NaN/Infinity tokens, non-numeric values),
	// a blank line, an integral float step, and a torn final line.
	in := `{"step": 1, "data": {"a": NaN, "b": Infinity, "c": -Infinity, "s": "NaN text", "t": true, "l": [1], "d": 2}}

{"step": 2.0, "data": {"NaN": 0.5}}
{"step": 3, "data": {"a": 1`
	recs, err := DecodeJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	r := recs[0]
	if !math.IsNaN(r.Data["a"]) || !math.IsInf(r.Data["b"], 1) || !math.IsInf(r.Data["c"], -1) || r.Data["d"] != 2 {
		t.Errorf("record 1: %v", r.Data)
	}
	if _, ok := r.Data["s"]; ok {
		t.Error("a string value was kept")
	}
	if len(r.Data) != 4 {
		t.Errorf("record 1 has %d values: %v", len(r.Data), r.Data)
	}
	if recs[1].Step != 2 || recs[1].Data["NaN"] != 0.5 {
		t.Errorf("record 2: %+v", recs[1])
	}
}

func TestDecodeJSONLErrors(t *testing.T) {
	cases := map[string]string{
		"bad json mid-file": "{\"step\":1,\"data\":{}}\n{oops\n{\"step\":2,\"data\":{}}\n",
		"missing step":      "{\"data\":{}}\n",
		"negative step":     "{\"step\":-1,\"data\":{}}\n",
		"fractional step":   "{\"step\":1.5,\"data\":{}}\n",
		"string step":       "{\"step\":\"1\",\"data\":{}}\n",
	}
	for name, in := range cases {
		_, err := DecodeJSONL(strings.NewReader(in))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: error %q does not name the line", name, err)
		}
	}
}

func TestTruncateOnResume(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.jsonl")
	// A killed run: steps 1..5 logged, checkpoint at step 3, then a torn write.
	j, err := OpenJSONL(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 5; s++ {
		if err := j.Log(s, map[string]float64{"r": float64(s)}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":6,"data":{"r":`)
	f.Close()

	// Resume from the step-3 checkpoint: steps 4, 5 and the torn 6 go.
	j, err = OpenJSONL(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	for s := 4; s <= 6; s++ {
		if err := j.Log(s, map[string]float64{"r": 10 * float64(s)}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	recs, err := ReadJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []int{1, 2, 3, 4, 5, 6}
	wantR := []float64{1, 2, 3, 40, 50, 60}
	if len(recs) != len(wantSteps) {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for i, r := range recs {
		if r.Step != wantSteps[i] || r.Data["r"] != wantR[i] {
			t.Errorf("record %d = step %d r %v, want step %d r %v", i, r.Step, r.Data["r"], wantSteps[i], wantR[i])
		}
	}
	// No temporary files left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries", len(ents))
	}
}

func TestTruncateEdgeCases(t *testing.T) {
	dir := t.TempDir()
	if err := Truncate(filepath.Join(dir, "missing.jsonl"), 3); err != nil {
		t.Errorf("missing file: %v", err)
	}
	// A complete last record without a trailing newline is kept and gets one.
	p := filepath.Join(dir, "a.jsonl")
	os.WriteFile(p, []byte("{\"step\":0,\"data\":{}}\n{\"step\":1,\"data\":{\"v\":1}}"), 0o644)
	if err := Truncate(p, 1); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if want := "{\"step\":0,\"data\":{}}\n{\"step\":1,\"data\":{\"v\":1}}\n"; string(got) != want {
		t.Errorf("got %q", got)
	}
	// A corrupt line in the middle is an error and the file is left alone.
	p = filepath.Join(dir, "b.jsonl")
	orig := "{\"step\":1,\"data\":{}}\ngarbage\n{\"step\":2,\"data\":{}}\n"
	os.WriteFile(p, []byte(orig), 0o644)
	if err := Truncate(p, 1); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("corrupt line: err = %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != orig {
		t.Error("file changed after an error")
	}
	if _, err := OpenJSONL("", 0); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := OpenJSONL(p, -1); err == nil {
		t.Error("negative resume step accepted")
	}
}

func FuzzDecodeJSONL(f *testing.F) {
	f.Add([]byte("{\"step\":1,\"data\":{\"a\":1.5,\"b\":null}}\n"))
	f.Add([]byte(`{"step": 2, "data": {"a": NaN, "b": -Infinity, "s": "x\"NaN"}}`))
	f.Add([]byte("{\"step\":1e3,\"data\":{\"a\":1e999}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := DecodeJSONL(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever parsed must survive a write/read round trip.
		var buf []byte
		for _, r := range recs {
			if r.Step < 0 {
				t.Fatalf("negative step %d", r.Step)
			}
			buf = AppendRecord(buf, r.Step, r.Data)
			buf = append(buf, '\n')
		}
		again, err := DecodeJSONL(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("re-decoding our own output: %v\n%s", err, buf)
		}
		if len(again) != len(recs) {
			t.Fatalf("%d records became %d", len(recs), len(again))
		}
		for i := range recs {
			for k, v := range recs[i].Data {
				w := again[i].Data[k]
				if v != w && !(math.IsNaN(w) && (math.IsNaN(v) || math.IsInf(v, 0))) {
					t.Fatalf("record %d key %q: %v became %v", i, k, v, w)
				}
			}
		}
	})
}

func BenchmarkJSONLLog(b *testing.B) {
	j, err := OpenJSONL(filepath.Join(b.TempDir(), "m.jsonl"), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	m := map[string]float64{}
	for i := range 100 {
		m["metric/key_"+string(rune('a'+i%26))+string(rune('a'+i/26))] = float64(i) / 7
	}
	for b.Loop() {
		if err := j.Log(1, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100, "metrics/op")
}

// Resumed: the trainer resumed from an older step than the file's newest
// (resume_path, or a corrupt newest checkpoint): later records go, and
// the next steps follow; Resumed(0) is a fresh start.
func TestJSONLResumed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	j, err := OpenJSONL(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for s := 0; s <= 3; s++ {
		j.Log(s, map[string]float64{"r": float64(s)})
	}
	if err := j.Resumed(1); err != nil {
		t.Fatal(err)
	}
	j.Log(2, map[string]float64{"r": 20})
	recs, _ := ReadJSONL(path)
	var steps []int
	for _, r := range recs {
		steps = append(steps, r.Step)
	}
	if fmt.Sprint(steps) != "[0 1 2]" || recs[2].Data["r"] != 20 {
		t.Errorf("after Resumed(1): %+v", recs)
	}
	if err := j.Resumed(0); err != nil {
		t.Fatal(err)
	}
	if recs, _ := ReadJSONL(path); len(recs) != 0 {
		t.Errorf("after Resumed(0): %+v", recs)
	}
	var _ Resumer = Multi(j).(*multi)
}
