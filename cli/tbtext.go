package cli

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ragen/config"
	"ragen/env"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/track"
)

// The tables upstream sends to W&B (validation generations, the group
// reward-variance table) also go to TensorBoard's text plugin: Markdown in
// an event file of their own next to the scalars' (TensorBoard reads every
// event file of a run folder).

// tbText appends text-plugin summaries to one event file.
type tbText struct {
	mu sync.Mutex
	f  *os.File
}

func openTBText(dir string) (*tbText, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	now := time.Now()
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.ragen-text", now.Unix())), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	// first record: Event{wall_time, file_version}
	ev := pbDouble(nil, 1, float64(now.UnixNano())/1e9)
	ev = pbBytes(ev, 3, []byte(track.EventFileVersion))
	if _, err := f.Write(track.AppendTFRecord(nil, ev)); err != nil {
		f.Close()
		return nil, err
	}
	return &tbText{f: f}, nil
}

// add writes one text summary: Event{wall_time, step, summary{value{tag,
// metadata{plugin_data{plugin_name "text"}}, tensor{DT_STRING, string_val}}}}.
func (t *tbText) add(step int, tag, markdown string) error {
	plugin := pbBytes(nil, 1, []byte("text"))                  // PluginData.plugin_name
	meta := pbBytes(nil, 1, plugin)                            // SummaryMetadata.plugin_data
	tensor := pbVarint(nil, 1, 7)                              // TensorProto.dtype = DT_STRING
	tensor = pbBytes(tensor, 2, nil)                           // tensor_shape: scalar
	tensor = pbBytes(tensor, 8, []byte(markdown))              // string_val
	value := pbBytes(nil, 1, []byte(tag))                      // Summary.Value.tag
	value = pbBytes(value, 8, tensor)                          // Value.tensor
	value = pbBytes(value, 9, meta)                            // Value.metadata
	ev := pbDouble(nil, 1, float64(time.Now().UnixNano())/1e9) // Event.wall_time
	ev = pbVarint(ev, 2, uint64(step))                         // Event.step
	ev = pbBytes(ev, 5, pbBytes(nil, 1, value))                // Event.summary{value}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.f.Write(track.AppendTFRecord(nil, ev))
	return err
}

func (t *tbText) Close() error { return t.f.Close() }

func pbKey(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func pbVarint(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(pbKey(b, field, 0), v)
}

func pbDouble(b []byte, field int, v float64) []byte {
	return binary.LittleEndian.AppendUint64(pbKey(b, field, 1), math.Float64bits(v))
}

func pbBytes(b []byte, field int, data []byte) []byte {
	b = binary.AppendUvarint(pbKey(b, field, 2), uint64(len(data)))
	return append(b, data...)
}

// generationsMarkdown renders validation episodes as the text plugin shows
// them: one heading per episode, its turns in code blocks.
func generationsMarkdown(ds []starpo.ValidationDump) string {
	var b strings.Builder
	for i, d := range ds {
		fmt.Fprintf(&b, "**%d.** %s group %d env %d, score %s, success %t\n\n", i, d.Tag, d.GroupID, d.EnvID, track.PyFloat(d.Score), d.Success)
		fmt.Fprintf(&b, "input:\n\n```\n%s\n```\n\noutput:\n\n```\n%s\n```\n\n", strings.ReplaceAll(d.Input, "```", "'''"), strings.ReplaceAll(d.Output, "```", "'''"))
	}
	return b.String()
}

// groupRVMarkdown renders the group reward-variance table.
func groupRVMarkdown(rows []starpo.GroupRV) string {
	var b strings.Builder
	b.WriteString("| group | tag | n | reward mean | reward std |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %d | %s | %s |\n", r.GroupID, r.Tag, r.N, track.PyFloat(r.RewardMean), track.PyFloat(r.RewardStd))
	}
	return b.String()
}

// tbTables wraps the rollout so that the first nGen episodes of every
// validation (val/generations) and, with rvTable, every training batch's
// group reward-variance table (train/group_rv_table) go to w.
func tbTables(rollout starpo.RolloutFunc, w *tbText, nGen int, rvTable bool, step func() int) starpo.RolloutFunc {
	return func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		b, err := rollout(ctx, mode, opt)
		if err != nil || b == nil {
			return b, err
		}
		switch {
		case mode == env.ModeVal && nGen > 0:
			ds := starpo.ValidationDumps(b, step())
			if len(ds) > nGen {
				ds = ds[:nGen]
			}
			err = w.add(step(), "val/generations", generationsMarkdown(ds))
		case mode == env.ModeTrain && rvTable:
			err = w.add(step()+1, "train/group_rv_table", groupRVMarkdown(starpo.GroupRVs(b, step()+1)))
		}
		if err != nil {
			return nil, fmt.Errorf("tensorboard text: %w", err)
		}
		return b, nil
	}
}

// tensorBoardTables adds the text-plugin tables to the rollout when the
// run logs to TensorBoard (trainer.logger) and asks for a table.
func (j *job) tensorBoardTables(t *config.Tree, rollout starpo.RolloutFunc, step func() int) (starpo.RolloutFunc, error) {
	r := &reader{t: t}
	var nGen int
	var rvTable bool
	r.int("trainer.generations_to_log_to_wandb.val", &nGen)
	r.bool("trainer.log_group_rv_table", &rvTable)
	if err := r.err(); err != nil {
		return nil, err
	}
	tb := false
	for _, b := range loggerBackends(t) {
		tb = tb || b == "tensorboard"
	}
	if !tb || (nGen <= 0 && !rvTable) || worldRank() != 0 {
		return rollout, nil
	}
	w, err := openTBText(filepath.Join(j.outDir, "tensorboard"))
	if err != nil {
		return nil, err
	}
	j.tbText = w
	return tbTables(rollout, w, nGen, rvTable, step), nil
}
