package ragen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// TrajectoryRecord is one line of the JSONL export (spec §6).
type TrajectoryRecord struct {
	CustomID string              // "traj_{i}"
	Messages []tokenizer.Message // states as user messages, responses as assistant messages
	Metadata TrajectoryMetadata
}

// TrajectoryMetadata is the "metadata" object of a JSONL line.
type TrajectoryMetadata struct {
	EnvID       int
	GroupID     int
	NumTurns    int     // history entries with actions
	TotalReward float64 // Σ rm_scores of the episode's (first) row
	Success     bool
	Metrics     map[string]float64 // every per-env metric, keys "{tag}/{name}"
	// Failure (ragen) is why the episode failed (a request that exhausted
	// its retries, a truncated reply, an env error); "" for a finished
	// episode. Written as "failure" only when set.
	Failure string
}

// ExportOptions tune the export.
type ExportOptions struct {
	// UpstreamSuccess reproduces upstream's metrics.get("success"), which is
	// always false because metric keys are tag-prefixed. Default: read
	// "{tag}/success".
	UpstreamSuccess bool
	// AlignRewards suffixes each state with the reward of the action that
	// led to it. Default (upstream): the reward of the action taken from it.
	AlignRewards bool
}

// TrajectoryRecords builds one record per episode of the batch.
func TrajectoryRecords(b *Batch, opt ExportOptions) []TrajectoryRecord {
	firstRow := map[int]int{}
	for r, e := range b.EpisodeIDs {
		if _, ok := firstRow[e]; !ok {
			firstRow[e] = r
		}
	}
	recs := make([]TrajectoryRecord, len(b.Episodes))
	for i, o := range b.Episodes {
		var msgs []tokenizer.Message
		turns := 0
		for j, h := range o.History {
			content := h.State
			if j > 0 {
				src := h
				if opt.AlignRewards {
					src = o.History[j-1]
				}
				if src.Acted && src.Reward.Value != 0 {
					content += " (reward: " + src.Reward.String() + ")"
				}
			}
			msgs = append(msgs, tokenizer.Message{Role: "user", Content: content})
			if h.Acted {
				turns++
				resp := h.LLMRawResponse
				if resp == "" {
					resp = h.LLMResponse
				}
				msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: resp})
			}
		}
		var total float32
		if r, ok := firstRow[i]; ok && r < len(b.RMScores) {
			for _, v := range b.RMScores[r] {
				total += v
			}
		}
		success := false
		if !opt.UpstreamSuccess {
			success = o.Metrics[o.Tag+"/success"] > 0
		}
		recs[i] = TrajectoryRecord{
			CustomID: fmt.Sprintf("traj_%d", i),
			Messages: msgs,
			Metadata: TrajectoryMetadata{EnvID: o.EnvID, GroupID: o.GroupID, NumTurns: turns, TotalReward: float64(total), Success: success, Metrics: o.Metrics},
		}
	}
	return recs
}

// WriteJSONL writes one JSON object per record, formatted like Python's
// json.dumps (", " and ": " separators, ASCII-only escapes, repr floats).
// Metric keys follow the fixed keys in sorted order.
func WriteJSONL(w io.Writer, recs []TrajectoryRecord) error {
	bw := bufio.NewWriter(w)
	for _, r := range recs {
		var b strings.Builder
		b.WriteString(`{"custom_id": `)
		writePyString(&b, r.CustomID)
		b.WriteString(`, "messages": [`)
		for i, m := range r.Messages {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(`{"role": `)
			writePyString(&b, m.Role)
			b.WriteString(`, "content": `)
			writePyString(&b, m.Content)
			b.WriteString("}")
		}
		md := r.Metadata
		fmt.Fprintf(&b, `], "metadata": {"env_id": %d, "group_id": %d, "num_turns": %d, "total_reward": %s, "success": %t`,
			md.EnvID, md.GroupID, md.NumTurns, pyJSONFloat(md.TotalReward), md.Success)
		if md.Failure != "" {
			b.WriteString(`, "failure": `)
			writePyString(&b, md.Failure)
		}
		for _, k := range SortedKeys(md.Metrics) {
			b.WriteString(", ")
			writePyString(&b, k)
			v := md.Metrics[k]
			if strings.HasSuffix(k, "/num_actions") && v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				b.WriteString(": " + strconv.FormatInt(int64(v), 10)) // a Python int upstream
			} else {
				b.WriteString(": " + pyJSONFloat(v))
			}
		}
		b.WriteString("}}\n")
		if _, err := bw.WriteString(b.String()); err != nil {
			return fmt.Errorf("ragen: write jsonl: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ragen: write jsonl: %w", err)
	}
	return nil
}

// pyJSONFloat is json.dumps of a float; NaN/Inf become null (Python would
// write the invalid tokens NaN/Infinity).
func pyJSONFloat(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	return env.PyFloatRepr(x)
}

// writePyString writes s as json.dumps(s) with ensure_ascii=True would.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r < 0x10000):
				if r == 0x7f {
					b.WriteRune(r)
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			case r >= 0x10000:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// WriteTrajectoryText pretty-prints one record for people reading
// trajectories: a header line, each message under its role, then metrics.
func WriteTrajectoryText(w io.Writer, rec TrajectoryRecord) error {
	var b strings.Builder
	md := rec.Metadata
	fmt.Fprintf(&b, "=== %s  env %d  group %d  turns %d  reward %s  success %t ===\n",
		rec.CustomID, md.EnvID, md.GroupID, md.NumTurns, env.PyFloatRepr(md.TotalReward), md.Success)
	turn := 0
	for _, m := range rec.Messages {
		label := m.Role
		if m.Role == "user" {
			turn++
			label = "state " + strconv.Itoa(turn)
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", label, strings.TrimRight(m.Content, "\n"))
	}
	if len(md.Metrics) > 0 {
		b.WriteString("--- metrics ---\n")
		keys := make([]string, 0, len(md.Metrics))
		for k := range md.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", k, strconv.FormatFloat(md.Metrics[k], 'g', 6, 64))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("ragen: write trajectory: %w", err)
	}
	return nil
}

// DefaultEvalOutputPath is upstream's default export path:
// results/eval/val_rollouts_{YYYYmmdd_HHMMSS}.{format} (format jsonl or pkl).
func DefaultEvalOutputPath(now time.Time, format string) string {
	return "results/eval/" + EvalOutputName("val_rollouts", true, now, format)
}

// EvalOutputName is upstream's export file name: the stem of
// output.filename, "_{YYYYmmdd_HHMMSS}" when output.append_timestamp, and
// the format's extension.
func EvalOutputName(stem string, timestamp bool, now time.Time, format string) string {
	if timestamp {
		stem += "_" + now.Format("20060102_150405")
	}
	return stem + "." + format
}

// ParseTrajectoryRecord reads one line written by WriteJSONL (upstream's
// layout: custom_id, messages, and metadata holding env_id, group_id,
// num_turns, total_reward, success and the flattened per-env metrics).
func ParseTrajectoryRecord(line []byte) (TrajectoryRecord, error) {
	var raw struct {
		CustomID string                     `json:"custom_id"`
		Messages []tokenizer.Message        `json:"messages"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	var rec TrajectoryRecord
	if err := json.Unmarshal(line, &raw); err != nil {
		return rec, fmt.Errorf("ragen: trajectory record: %w", err)
	}
	if raw.CustomID == "" || raw.Metadata == nil {
		return rec, fmt.Errorf("ragen: trajectory record: missing custom_id or metadata")
	}
	rec.CustomID, rec.Messages = raw.CustomID, raw.Messages
	md := &rec.Metadata
	fields := map[string]any{"env_id": &md.EnvID, "group_id": &md.GroupID, "num_turns": &md.NumTurns,
		"total_reward": &md.TotalReward, "success": &md.Success}
	for k, v := range raw.Metadata {
		if dst, ok := fields[k]; ok {
			if string(v) == "null" {
				continue
			}
			if err := json.Unmarshal(v, dst); err != nil {
				return rec, fmt.Errorf("ragen: trajectory record: metadata.%s: %w", k, err)
			}
			continue
		}
		var f *float64
		if err := json.Unmarshal(v, &f); err != nil {
			continue // a non-numeric entry: not a metric
		}
		if md.Metrics == nil {
			md.Metrics = map[string]float64{}
		}
		if f == nil {
			md.Metrics[k] = math.NaN()
		} else {
			md.Metrics[k] = *f
		}
	}
	return rec, nil
}
