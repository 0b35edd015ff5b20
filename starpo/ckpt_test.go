package starpo

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"ragen/filter"
	"ragen/torch"
)

// Regression (issue 14): the actor and critic retention limits shared one
// pointer in DefaultConfig, so the last key decoded set both.
func TestRetentionLimitsDecodeSeparately(t *testing.T) {
	for _, src := range []string{
		"trainer: {max_actor_ckpt_to_keep: 3, max_critic_ckpt_to_keep: 1}",
		"trainer: {max_critic_ckpt_to_keep: 1, max_actor_ckpt_to_keep: 3}",
	} {
		c := DefaultConfig()
		require.NoError(t, yaml.Unmarshal([]byte(src), &c))
		assert.Equal(t, 3, *c.Trainer.MaxActorCkptToKeep, src)
		assert.Equal(t, 1, *c.Trainer.MaxCriticCkptToKeep, src)
	}
	c := DefaultConfig()
	*c.Trainer.MaxActorCkptToKeep = 5
	assert.Equal(t, 1, *c.Trainer.MaxCriticCkptToKeep)
	assert.Equal(t, 1, *DefaultConfig().Trainer.MaxActorCkptToKeep, "DefaultConfig returns fresh pointers")
}

// warnLogger records warnings (the optional Warner interface).
type warnLogger struct {
	recLogger
	warnings []string
}

func (w *warnLogger) Warn(msg string) { w.warnings = append(w.warnings, msg) }

func ckptConfig(dir string, steps int, keepActor, keepCritic int) Config {
	c := smallConfig(dir)
	c.Trainer.TotalTrainingSteps = steps
	c.Trainer.SaveFreq = 1
	c.Trainer.ValBeforeTrain = false
	c.Trainer.TestFreq = 0
	c.Trainer.MaxActorCkptToKeep, c.Trainer.MaxCriticCkptToKeep = &keepActor, &keepCritic
	return c
}

// Each retention limit applies on its own: 3 actor checkpoints kept, the
// critic only in the newest one.
func TestRetentionLimitsApplySeparately(t *testing.T) {
	m := newModels(21)
	defer m.Close()
	dir := t.TempDir()
	tr := newTestTrainer(t, ckptConfig(dir, 4, 3, 1), m, banditProxy(t, 2, 4, 2), &recLogger{})
	_, err := tr.Fit(context.Background())
	require.NoError(t, err)
	steps, err := listSteps(dir)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3, 4}, steps)
	for _, n := range steps {
		_, err := os.Stat(filepath.Join(tr.StepDir(n), "critic"))
		assert.Equal(t, n == 4, err == nil, "critic folder of step %d", n)
		assert.NoError(t, VerifyCheckpoint(tr.StepDir(n)), "a pruned critic folder is not corruption")
	}
}

// A corrupt latest checkpoint: resume_path is a clear error naming the file;
// resume_mode=auto falls back to the newest intact one and says so.
func TestCorruptCheckpointFallsBack(t *testing.T) {
	m := newModels(22)
	defer m.Close()
	dir := t.TempDir()
	cfg := ckptConfig(dir, 3, 0, 0)
	tr := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), &recLogger{})
	_, err := tr.Fit(context.Background())
	require.NoError(t, err)
	for n := 1; n <= 3; n++ {
		require.NoError(t, VerifyCheckpoint(tr.StepDir(n)))
	}
	sums, err := os.ReadFile(filepath.Join(tr.StepDir(3), ChecksumFile))
	require.NoError(t, err)
	for _, f := range []string{"actor/model.safetensors", "actor/optim.safetensors", "critic/model.safetensors", StateFile} {
		assert.Contains(t, string(sums), "  "+f+"\n")
	}

	// Flip one byte of step 3's actor weights (same size: only a checksum sees it).
	p := filepath.Join(tr.StepDir(3), "actor", modelFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x40
	require.NoError(t, os.WriteFile(p, b, 0o644))
	// Truncate step 2's state.
	require.NoError(t, os.WriteFile(filepath.Join(tr.StepDir(2), StateFile), []byte("{"), 0o644))

	err = VerifyCheckpoint(tr.StepDir(3))
	var ce *CorruptCheckpointError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "actor/model.safetensors", ce.File)

	pathCfg := cfg
	pathCfg.Trainer.ResumeMode = ResumePath
	pathCfg.Trainer.ResumeFromPath = tr.StepDir(3)
	m2 := newModels(23)
	defer m2.Close()
	tp := newTestTrainer(t, pathCfg, m2, banditProxy(t, 2, 4, 2), &recLogger{})
	err = tp.resume()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "actor/model.safetensors does not match its checksum")

	cfg.Trainer.ResumeMode = ResumeAuto
	wl := &warnLogger{}
	ta := newTestTrainer(t, cfg, m2, banditProxy(t, 2, 4, 2), wl)
	require.NoError(t, ta.resume())
	assert.Equal(t, 1, ta.Step(), "fell back past the corrupt steps 3 and 2")
	require.Len(t, wl.warnings, 1)
	assert.Contains(t, wl.warnings[0], "global_step_1, the newest intact checkpoint")
	assert.Contains(t, wl.warnings[0], "global_step_3 is corrupt: actor/model.safetensors")
	assert.Contains(t, wl.warnings[0], "global_step_2 is corrupt: "+StateFile)

	// Nothing intact: a clear error, no silent fresh start.
	require.NoError(t, os.Remove(filepath.Join(tr.StepDir(1), "critic", optimFile)))
	tn := newTestTrainer(t, cfg, m2, banditProxy(t, 2, 4, 2), wl)
	err = tn.resume()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no intact checkpoint")
	assert.Contains(t, err.Error(), "critic/optim.safetensors is missing")
}

// Regression (issue 14): optim.lr=inf wrote NaN weights into a checkpoint.
// Saving refuses non-finite weights and leaves no checkpoint behind.
func TestCheckpointRefusesNonFiniteWeights(t *testing.T) {
	m := newModels(24)
	defer m.Close()
	dir := t.TempDir()
	tr, err := NewTrainer(ckptConfig(dir, 1, 0, 0), Deps{Actor: m.actor, Critic: m.critic, Rollout: banditProxy(t, 2, 4, 2).RolloutWith, Filter: filter.DefaultConfig()})
	require.NoError(t, err)
	defer tr.Close()
	p := m.actor.Trainable()[0]
	require.NoError(t, torch.NoGrad(func() error {
		return withScope(func(s *torch.Scope) error {
			s.FillInto(p, math.NaN())
			return s.Err()
		})
	}))
	err = tr.SaveCheckpoint()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing to save param.0")
	steps, _ := listSteps(dir)
	assert.Empty(t, steps)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".tmp"), "temporary folder %s left behind", e.Name())
	}
}

func TestFirstNonFinite(t *testing.T) {
	assert.Equal(t, -1, firstNonFinite([]byte{0, 0, 0x80, 0x3f}, torch.Float32))
	assert.Equal(t, 1, firstNonFinite([]byte{0, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f}, torch.Float32)) // NaN
	assert.Equal(t, 0, firstNonFinite([]byte{0x80, 0xff}, torch.BFloat16))                        // -Inf
	assert.Equal(t, 0, firstNonFinite([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f}, torch.Float64))       // +Inf
}

// Regression (issue 14): optim.lr=inf passed validation.
func TestValidateRejectsNonFinite(t *testing.T) {
	c := DefaultConfig()
	c.ActorRolloutRef.Actor.Optim.LR = math.Inf(1)
	c.Critic.Optim.Betas = []float64{0.9, math.NaN()}
	c.Algorithm.KLCtrl.TargetKL = math.Inf(-1)
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"actor_rollout_ref.actor.optim.lr: +Inf is not finite",
		"critic.optim.betas[1]: NaN is not finite",
		"algorithm.kl_ctrl.target_kl: -Inf is not finite",
	} {
		assert.Contains(t, err.Error(), want)
	}
	require.NoError(t, DefaultConfig().Validate())
}

// A checkpoint without checksums.sha256 is still checked on load: NaN
// weights or optimizer moments are a clear error naming the file and the
// tensor, not a torch error later in sampling, and the model is left as it
// was.
func TestLoadRefusesNonFiniteCheckpoint(t *testing.T) {
	m := newModels(25)
	defer m.Close()
	dir := t.TempDir()
	cfg := ckptConfig(dir, 1, 0, 0)
	tr := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), &recLogger{})
	_, err := tr.Fit(context.Background())
	require.NoError(t, err)
	step := tr.StepDir(1)
	require.NoError(t, os.Remove(filepath.Join(step, ChecksumFile)))
	require.NoError(t, VerifyCheckpoint(step), "a folder without checksums passes verification")

	for _, file := range []string{"actor/" + modelFile, "critic/" + optimFile} {
		t.Run(file, func(t *testing.T) {
			p := filepath.Join(step, filepath.FromSlash(file))
			orig, err := os.ReadFile(p)
			require.NoError(t, err)
			defer os.WriteFile(p, orig, 0o644)
			b := append([]byte(nil), orig...)
			copy(b[len(b)-4:], []byte{0, 0, 0xf8, 0x7f}) // the high half of the last float64 (or the last float32): NaN either way
			require.NoError(t, os.WriteFile(p, b, 0o644))

			m2 := newModels(26)
			defer m2.Close()
			before, err := torch.Data[float32](m2.actor.Trainable()[0])
			require.NoError(t, err)
			pathCfg := cfg
			pathCfg.Trainer.ResumeMode = ResumePath
			pathCfg.Trainer.ResumeFromPath = step
			tp := newTestTrainer(t, pathCfg, m2, banditProxy(t, 2, 4, 2), &recLogger{})
			err = tp.resume()
			require.Error(t, err)
			assert.Contains(t, err.Error(), file)
			assert.Contains(t, err.Error(), "is not finite (NaN or Inf): this checkpoint cannot be resumed")
			if file == "actor/"+modelFile {
				after, err := torch.Data[float32](m2.actor.Trainable()[0])
				require.NoError(t, err)
				assert.Equal(t, before, after, "a refused checkpoint leaves the model as it was")
			}
		})
	}
}
