package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/starpo"
	"ragen/track"
)

// pbFields decodes one protobuf message into field -> values (varints as
// uint64, length-delimited as []byte, fixed64 as uint64).
func pbFields(t *testing.T, b []byte) map[int][]any {
	t.Helper()
	out := map[int][]any{}
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		require.Positive(t, n)
		b = b[n:]
		field, wire := int(key>>3), int(key&7)
		switch wire {
		case 0:
			v, n := binary.Uvarint(b)
			require.Positive(t, n)
			out[field] = append(out[field], v)
			b = b[n:]
		case 1:
			out[field] = append(out[field], binary.LittleEndian.Uint64(b))
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			require.Positive(t, n)
			out[field] = append(out[field], b[n:n+int(l)])
			b = b[n+int(l):]
		default:
			t.Fatalf("wire type %d", wire)
		}
	}
	return out
}

// tfRecords splits a TFRecord file, checking both checksums.
func tfRecords(t *testing.T, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := binary.LittleEndian.Uint64(b)
		require.Equal(t, track.MaskedCRC32C(b[:8]), binary.LittleEndian.Uint32(b[8:]))
		data := b[12 : 12+n]
		require.Equal(t, track.MaskedCRC32C(data), binary.LittleEndian.Uint32(b[12+n:]))
		out = append(out, data)
		b = b[16+n:]
	}
	return out
}

func TestTensorBoardTextEvents(t *testing.T) {
	dir := t.TempDir()
	w, err := openTBText(dir)
	require.NoError(t, err)
	md := groupRVMarkdown([]starpo.GroupRV{{Step: 3, GroupID: 1, Tag: "Bandit", N: 4, RewardMean: 0.5, RewardStd: 0.5}})
	require.Equal(t, "| group | tag | n | reward mean | reward std |\n|---|---|---|---|---|\n| 1 | Bandit | 4 | 0.5 | 0.5 |\n", md)
	require.NoError(t, w.add(3, "train/group_rv_table", md))
	require.NoError(t, w.Close())
	files, err := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*.ragen-text"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	recs := tfRecords(t, raw)
	require.Len(t, recs, 2)
	require.Equal(t, []byte(track.EventFileVersion), pbFields(t, recs[0])[3][0])
	ev := pbFields(t, recs[1])
	require.Equal(t, uint64(3), ev[2][0])
	value := pbFields(t, pbFields(t, ev[5][0].([]byte))[1][0].([]byte))
	require.Equal(t, []byte("train/group_rv_table"), value[1][0])
	plugin := pbFields(t, pbFields(t, value[9][0].([]byte))[1][0].([]byte))
	require.Equal(t, []byte("text"), plugin[1][0])
	tensor := pbFields(t, value[8][0].([]byte))
	require.Equal(t, uint64(7), tensor[1][0], "DT_STRING")
	require.Equal(t, []byte(md), tensor[8][0])

	g := generationsMarkdown([]starpo.ValidationDump{{Input: "pick", Output: "```x```", Score: 1, Tag: "Bandit", Success: true}})
	require.Contains(t, g, "**0.** Bandit group 0 env 0, score 1.0, success true")
	require.Contains(t, g, "'''x'''", "fences in model output cannot close the block")
}

func TestOnlineLoggersFallBackToTensorBoard(t *testing.T) {
	for _, l := range []string{"clearml", "vemlp_wandb", "wandb"} {
		tr, _, err := loadTree([]string{"trainer.logger=[console," + l + "]"}, "base")
		require.NoError(t, err)
		require.Equal(t, []string{"console", "tensorboard", "jsonl"}, loggerBackends(tr), l)
	}
}
