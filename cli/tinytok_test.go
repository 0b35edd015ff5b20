package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/llm/tokenizer"
)

// `ragen train model_path=tiny +demo.model.tokenizer=DIR` builds the tiny
// model over that Hugging Face tokenizer's vocabulary, and
// rollout.allowed_token_ids restricts what it samples: with only the ids
// of "q" and "z" allowed, every reply of the step's rollout is q's and z's.
// A folder without a tokenizer is an error that names the key.
func TestTinyModelTokenizerAndAllowedIDs(t *testing.T) {
	dir := t.TempDir()
	tok, err := tokenizer.TrainBPE([]string{"the cat sat on the mat", "a quiz on zebras"}, tokenizer.TrainOptions{VocabSize: 300})
	require.NoError(t, err)
	tokDir := filepath.Join(dir, "tok")
	require.NoError(t, tok.Save(tokDir))
	q, z := tok.Encode("q"), tok.Encode("z")
	require.Len(t, q, 1)
	require.Len(t, z, 1)

	tr, _, err := loadTree([]string{"--config-name", "demo", "+demo.model.tokenizer=" + tokDir}, "base")
	require.NoError(t, err)
	m, mtok, err := loadModel(tr, "cpu")
	require.NoError(t, err)
	defer m.Close()
	require.IsType(t, &tokenizer.HF{}, mtok)
	require.Equal(t, tok.VocabSize(), mtok.VocabSize())
	require.Equal(t, tok.VocabSize(), m.Config().VocabSize)
	mc, _, err := modelConfigFor(tr)
	require.NoError(t, err)
	require.Equal(t, m.Config(), mc)

	out := filepath.Join(dir, "run")
	args := append(trainArgs(out, 1), "+demo.model.tokenizer="+tokDir, "trainer.save_freq=-1",
		"+actor_rollout_ref.rollout.allowed_token_ids=["+strconv.Itoa(q[0])+","+strconv.Itoa(z[0])+"]")
	require.NoError(t, run(context.Background(), args))
	f, err := os.Open(filepath.Join(out, "rollouts", "train_step_1.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	replies := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var traj struct {
			Messages []struct{ Role, Content string }
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &traj))
		for _, msg := range traj.Messages {
			if msg.Role != "assistant" {
				continue
			}
			reply, ok := strings.CutPrefix(msg.Content, "<think>")
			require.True(t, ok, msg.Content)
			require.NotEmpty(t, reply)
			require.Empty(t, strings.Trim(reply, "qz"), "reply %q has ids outside q and z", reply)
			replies++
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 8, replies) // 2 groups of 4, one turn

	for _, bad := range []string{filepath.Join(dir, "none"), dir} {
		tr, _, err := loadTree([]string{"--config-name", "demo", "+demo.model.tokenizer=" + bad}, "base")
		require.NoError(t, err)
		_, _, err = loadModel(tr, "cpu")
		require.ErrorContains(t, err, "demo.model.tokenizer", bad)
		_, _, err = modelConfigFor(tr)
		require.ErrorContains(t, err, "demo.model.tokenizer", bad)
	}
}
