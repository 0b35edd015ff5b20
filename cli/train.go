package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"ragen/collapse"
	"ragen/config"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/torch"
	"ragen/track"
)

// job is everything a training run is built from.
type job struct {
	tree    *config.Tree
	rc      ragen.Config
	sc      starpo.Config
	fc      filter.Config
	cc      collapse.Config
	model   *llm.Model
	tok     tokenizer.Tokenizer
	ref     *llm.Model
	critic  *llm.Critic
	proxy   *ragen.AgentProxy
	gaProxy *ragen.AgentProxy // the separate gradient-analysis rollout's envs
	tbText  *tbText           // TensorBoard text tables (tbtext.go)
	logger  track.Logger
	jsonl   string
	outDir  string
	lock    *runLock // this process's hold on outDir (runlock.go)
	trainer *starpo.Trainer
}

func (j *job) close() {
	if j.trainer != nil {
		j.trainer.Close()
	}
	if j.logger != nil {
		j.logger.Close()
	}
	if j.proxy != nil {
		j.proxy.Close()
	}
	if j.gaProxy != nil {
		j.gaProxy.Close()
	}
	if j.tbText != nil {
		j.tbText.Close()
	}
	if j.critic != nil {
		j.critic.Close()
	}
	if j.ref != nil {
		j.ref.Close()
	}
	if j.model != nil {
		j.model.Close()
	}
	j.lock.release()
	// the C heap keeps freed tensor memory for reuse within a run (see
	// torch.ReleaseFreedMemory); a program that trains again next (a sweep,
	// the StarPO bench) would otherwise see this run's peak as in use
	runtime.GC()
	torch.ReleaseFreedMemory()
}

// libraryConfigs maps the key tree onto the library packages' configs and
// validates the whole set before any work starts.
func libraryConfigs(t *config.Tree) (ragen.Config, starpo.Config, filter.Config, collapse.Config, error) {
	var errs []error
	if err := config.Derive(t); err != nil {
		errs = append(errs, err)
	}
	if err := config.Validate(t); err != nil {
		// config.Validate runs the owning packages' checks too (each rule
		// has one home): the library Validates below would repeat them
		return ragen.Config{}, starpo.Config{}, filter.Config{}, collapse.Config{}, errors.Join(append(errs, err)...)
	}
	rc, err := rolloutConfig(t)
	errs = append(errs, err)
	sc := starpo.DefaultConfig()
	errs = append(errs, t.DecodeLoose("", &sc))
	// A key deleted from the config (~key) takes upstream's code default,
	// not base.yaml's (filter.md §1, collapse.md §1).
	fc := filter.CodeDefaultConfig()
	errs = append(errs, t.DecodeLoose("actor_rollout_ref.rollout", &fc))
	fc.NumGroups, fc.GroupSize = rc.ESManager.Train.EnvGroups, rc.ESManager.Train.GroupSize
	if !t.Has("actor_rollout_ref.rollout.rollout_filter_type") {
		errs = append(errs, errors.New("actor_rollout_ref.rollout.rollout_filter_type is missing: upstream requires it (largest or smallest)"))
	}
	cc := collapse.CodeDefaultConfig()
	if t.Has("collapse_detection") {
		errs = append(errs, t.DecodeLoose("collapse_detection", &cc))
	}
	if err := errors.Join(errs...); err != nil {
		return rc, sc, fc, cc, err
	}
	errs = append(errs, sc.Validate(), fc.Validate(), cc.Validate())
	return rc, sc, fc, cc, errors.Join(errs...)
}

// loggerBackends maps trainer.logger onto the backends available offline.
func loggerBackends(t *config.Tree) []string {
	names := []string{"console", "jsonl", "tensorboard"}
	if t.Has("trainer.logger") {
		if v, err := t.StringSlice("trainer.logger"); err == nil {
			names = nil
			seen := map[string]bool{}
			for _, n := range append(v, "jsonl") { // JSONL always: plots are made from it
				switch n {
				case "wandb", "swanlab", "mlflow", "clearml", "vemlp_wandb":
					fmt.Fprintf(os.Stderr, "ragen: trainer.logger %s needs an online service; logging to jsonl and tensorboard instead\n", n)
					n = "tensorboard"
				}
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// buildJob loads the model, the rollout machinery and the trainer.
// A model and tokenizer made by the caller (the demo's SFT stage) are
// used as given and owned by the job from then on.
func buildJob(t *config.Tree, deviceFlag string, quietBar bool, model *llm.Model, tok tokenizer.Tokenizer) (*job, error) {
	j := &job{tree: t, model: model, tok: tok}
	var err error
	if j.rc, j.sc, j.fc, j.cc, err = libraryConfigs(t); err != nil {
		return nil, err
	}
	// The run folder is this process's before any slow or writing work.
	j.outDir = j.sc.Trainer.DefaultLocalDir
	if j.outDir == "" {
		j.outDir = filepath.Join("checkpoints", j.sc.Trainer.ProjectName, j.sc.Trainer.ExperimentName)
	}
	ok := false
	defer func() {
		if !ok {
			j.close()
		}
	}()
	if j.lock, err = lockRunDir(j.outDir, worldRank()); err != nil {
		return nil, err
	}
	if j.model == nil {
		opt, err := modelOptions(t, deviceFlag)
		if err != nil {
			return nil, err
		}
		mc, tok, err := modelConfigFor(t)
		if err != nil {
			return nil, err
		}
		if err := checkMemory(t, mc, opt.Device); err != nil {
			return nil, err
		}
		if j.model, j.tok, err = loadModelTok(t, deviceFlag, tok); err != nil {
			return nil, err
		}
		if mo := j.model.Options(); opt.AutoCompute && j.model.ComputeDType() != mo.DType {
			fmt.Fprintf(os.Stderr, "ragen: mixed precision: training, scoring and generation compute in %s on %s master weights (compute_dtype auto: %s; +actor_rollout_ref.model.compute_dtype=%s keeps %s)\n",
				j.model.ComputeDType(), mo.DType, autoComputeWhy(mo), mo.DType, mo.DType)
		}
	}
	if t.Has("lora.rank") {
		if r, _ := t.Int("lora.rank"); r > 0 {
			lc := llm.LoRAConfig{Rank: r}
			var alpha float64
			var targets string
			rd := &reader{t: t}
			rd.float("lora.alpha", &alpha)
			rd.str("lora.target_modules", &targets)
			if err := rd.err(); err != nil {
				return nil, err
			}
			lc.Alpha, lc.Targets, lc.Seed = alpha, llm.ParseTargets(targets), uint64(j.sc.Seed.Train)
			if err := j.model.EnableLoRA(lc); err != nil {
				return nil, err
			}
		}
	}
	if j.sc.ActorRolloutRef.Actor.UseRef {
		if j.ref, err = j.model.Clone(); err != nil {
			return nil, err
		}
	}
	if config.CriticEnabled(t) {
		if j.critic, err = loadCritic(t, j.model, deviceFlag); err != nil {
			return nil, err
		}
	}
	policy := llmpolicy.New(j.model, j.tok, llmpolicy.Options{Seed: uint64(j.sc.Seed.Train)})
	if j.proxy, err = ragen.NewAgentProxy(j.rc, j.tok, ragen.DefaultProvider(), policy); err != nil {
		return nil, err
	}
	opts := track.Options{Project: j.sc.Trainer.ProjectName, Experiment: j.sc.Trainer.ExperimentName,
		Dir: j.outDir, JSONLPath: filepath.Join(j.outDir, "metrics.jsonl"), TensorBoardDir: filepath.Join(j.outDir, "tensorboard"),
		TotalSteps: j.sc.Trainer.TotalTrainingSteps, NoTable: quietBar}
	if resumeStep := lastCheckpointStep(j.outDir, j.sc.Trainer.ResumeMode); resumeStep > 0 {
		opts.ResumeStep = resumeStep
	}
	j.jsonl = opts.JSONLPath
	if worldRank() == 0 { // rank 0 alone logs (launch.go)
		if j.logger, err = track.New(loggerBackends(t), opts); err != nil {
			return nil, err
		}
	}
	var trainer *starpo.Trainer
	step := func() int { return trainer.Step() }
	rollout, err := outputDumps(t, j.outDir, j.proxy.RolloutWith, step)
	if err != nil {
		return nil, err
	}
	if rollout, err = j.tensorBoardTables(t, rollout, step); err != nil {
		return nil, err
	}
	deps := starpo.Deps{Actor: j.model, Rollout: rollout, Filter: j.fc, Logger: j.logger}
	if st, ok := policy.(starpo.Stateful); ok {
		// the sampling position travels with checkpoints, so a resumed run
		// draws the same samples an uninterrupted one would
		deps.State = map[string]starpo.Stateful{"policy": st}
	}
	if j.ref != nil {
		deps.Ref = j.ref
	}
	if j.critic != nil {
		deps.Critic = j.critic
	}
	j.cc.ThinkDisabled = !j.rc.AgentProxy.EnableThink
	j.cc.ContextWindowMode = j.rc.AgentProxy.ContextWindowMode
	if (j.cc.FirstTurnEnabled || j.cc.MultiTurnEnabled) && !j.cc.ThinkDisabled && j.cc.ContextWindowMode == ragen.ModeFull {
		// samples reseeded per step and the EMA checkpointed: exact resume
		if deps.Collapse, err = collapse.NewDetectorPerStep(j.cc, int64(j.sc.Seed.Train)); err != nil {
			return nil, err
		}
		if deps.State == nil {
			deps.State = map[string]starpo.Stateful{}
		}
		deps.State["collapse"] = deps.Collapse
		// each prompt runs once, its reasonings as KV-cache continuations (same scores)
		deps.Scorer = llm.NewPrefixScorer(j.model, j.cc.MicroBatchSize, 1)
	}
	rdir, err := rolloutDataDir(t, j.outDir)
	if err != nil {
		return nil, err
	}
	if rdir != "" && worldRank() == 0 { // trajectories and filter decisions for ragen dash (cli/rollouts.go)
		x := &rolloutExport{dir: rdir, opt: ragen.ExportOptions{UpstreamSuccess: j.rc.Compat.JSONLSuccess}, fc: j.fc,
			nextFn: func() int { return j.trainer.Step() + 1 }}
		deps.Rollout, deps.OnFilter = x.wrap(deps.Rollout), x.onFilter
	}
	if j.trainer, err = starpo.NewTrainer(j.sc, deps); err != nil {
		return nil, err
	}
	trainer = j.trainer
	if err := j.analysisRollout(t, policy); err != nil {
		return nil, err
	}
	ok = true
	return j, nil
}

// lastCheckpointStep is the newest global_step_N under dir when resuming
// automatically (0 otherwise), so that logs continue instead of restarting.
func lastCheckpointStep(dir, mode string) int {
	if mode == starpo.ResumeDisable {
		return 0
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	best := 0
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "global_step_%d", &n); err == nil && e.IsDir() && n > best {
			best = n
		}
	}
	return best
}

func cmdTrain(ctx context.Context, args []string) error {
	fl, rest, err := splitFlags(args, "device", "jobs")
	if err != nil {
		return err
	}
	multi := false
	var kept []string
	for _, a := range rest {
		if isMultirunFlag(a) {
			multi = true
			continue
		}
		kept = append(kept, a)
	}
	jobs := 1
	if s, ok := fl["jobs"]; ok {
		if jobs, err = strconv.Atoi(s); err != nil || jobs < 1 {
			return fmt.Errorf("--jobs %q: want a positive number of runs at once", s)
		}
		if !multi {
			return fmt.Errorf("--jobs needs a multirun (-m key=a,b,...)")
		}
	}
	if multi {
		return runSweep(ctx, kept, fl["device"], jobs)
	}
	return trainOnce(ctx, kept, fl["device"], false)
}

// trainOnce is one `ragen train` run: load and check the config, say once
// what has no effect here, train, export.
func trainOnce(ctx context.Context, args []string, deviceFlag string, quietBar bool) error {
	var hydraNotes []string
	var rest []string
	for _, a := range args {
		if k, _, _ := strings.Cut(strings.TrimLeft(a, "+~"), "="); strings.HasPrefix(k, "hydra.") {
			hydraNotes = append(hydraNotes, k)
			continue
		}
		rest = append(rest, a)
	}
	t, a, err := loadTree(rest, "base")
	if err != nil {
		return err
	}
	if a.Cfg != "" {
		fmt.Print(a.Print(t))
		return nil
	}
	if err := checkWorldSize(t); err != nil {
		return err
	}
	if len(hydraNotes) > 0 {
		fmt.Fprintf(os.Stderr, "ragen: %s: no effect: Hydra's own settings do not exist here (outputs go to trainer.default_local_dir; sweeps take hydra.sweep.dir with -m)\n", strings.Join(hydraNotes, ", "))
	}
	if n := config.InertNotice(t, a.Overrides...); n != "" {
		fmt.Fprint(os.Stderr, "ragen: "+n)
	}
	if deviceFlag, err = trainerDevice(t, a.Overrides, deviceFlag, os.Stderr); err != nil {
		return err
	}
	if err := featureNotices(t, os.Stderr); err != nil {
		return err
	}
	j, err := buildJob(t, deviceFlag, quietBar, nil, nil)
	if err != nil {
		return err
	}
	defer j.close()
	g, err := joinWorld(ctx, j.trainer) // data parallel when launched with several ranks (launch.go)
	if err != nil {
		return err
	}
	if g != nil {
		defer g.Close()
	}
	start := time.Now()
	reason, err := j.trainer.Fit(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("training stopped: %s after %d steps in %s\n", reason, j.trainer.Step(), time.Since(start).Round(time.Second))
	if g != nil && g.Rank() != 0 {
		return nil // rank 0 alone exports and plots
	}
	return j.finish()
}

// finish exports the trained policy and draws the plots.
func (j *job) finish() error {
	final := filepath.Join(j.outDir, "final")
	if err := saveModel(final, j.model, j.tok); err != nil {
		return err
	}
	fmt.Printf("exported the trained policy to %s\n", final)
	pngs, err := track.PlotJSONL(j.jsonl, filepath.Join(j.outDir, "plots"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ragen: plots:", err)
	} else if len(pngs) > 0 {
		fmt.Printf("plots: %s\n", filepath.Dir(pngs[0]))
	}
	return nil
}

// saveModel writes a Hugging Face folder (model and tokenizer). The byte
// tokenizer is written as its Hugging Face equivalent: a byte-level BPE
// with no merges, bytes at ids 0-255 and the three specials after them,
// which encodes ASCII text to the same ids (and any text after NFC).
func saveModel(dir string, m *llm.Model, tok tokenizer.Tokenizer) error {
	if _, ok := tok.(*tokenizer.Byte); ok {
		hf, err := tokenizer.TrainBPE(nil, tokenizer.TrainOptions{VocabSize: tok.VocabSize()})
		if err != nil {
			return err
		}
		for _, s := range tokenizer.DefaultTrainSpecials {
			a, _ := tok.TokenID(s)
			if b, ok := hf.TokenID(s); !ok || a != b {
				return fmt.Errorf("save: byte tokenizer special %q has id %d, its Hugging Face form %d", s, a, b)
			}
		}
		tok = hf
	}
	if _, ok := tok.(llm.HFSaver); !ok {
		return fmt.Errorf("save: tokenizer %T has no Hugging Face form", tok)
	}
	return llm.SaveHF(dir, m, tok)
}

// loadCritic builds the critic: from critic.model.path when it names a
// folder of its own (a Qwen2ForTokenClassification critic as Critic.Save
// writes it, or a causal LM whose trunk seeds a fresh value head, as
// upstream's AutoModelForTokenClassification load does), else from the
// actor's current weights.
// Its trunk checkpoints activations per critic.model.enable_gradient_checkpointing.
func loadCritic(t *config.Tree, actor *llm.Model, deviceFlag string) (*llm.Critic, error) {
	on, err := checkpointingKey(t, "critic.model.enable_gradient_checkpointing")
	if err != nil {
		return nil, err
	}
	c, err := buildCritic(t, actor, deviceFlag)
	if err == nil {
		c.Trunk().SetGradientCheckpointing(on)
	}
	return c, err
}

func buildCritic(t *config.Tree, actor *llm.Model, deviceFlag string) (*llm.Critic, error) {
	cp, mp := "", ""
	if t.Has("critic.model.path") {
		cp, _ = t.String("critic.model.path")
	}
	if t.Has("model_path") {
		mp, _ = t.String("model_path")
	}
	if cp == "" || cp == mp || cp == "tiny" {
		return llm.NewCritic(actor)
	}
	if err := localModelDir(cp); err != nil {
		return nil, fmt.Errorf("critic.model.path: %w", err)
	}
	opt, err := modelOptions(t, deviceFlag)
	if err != nil {
		return nil, err
	}
	cfg, err := llm.ReadConfig(cp)
	if err != nil {
		return nil, fmt.Errorf("critic.model.path: %w", err)
	}
	if len(cfg.Architectures) > 0 && strings.HasSuffix(cfg.Architectures[0], "ForTokenClassification") {
		c, err := llm.LoadCritic(cp, opt)
		if err != nil {
			return nil, fmt.Errorf("critic.model.path: %w", err)
		}
		return c, nil
	}
	m, err := llm.Load(cp, opt)
	if err != nil {
		return nil, fmt.Errorf("critic.model.path: %w", err)
	}
	defer m.Close()
	c, err := llm.NewCritic(m)
	if err != nil {
		return nil, fmt.Errorf("critic.model.path: %w", err)
	}
	return c, nil
}

// outputDumps wraps the rollout with upstream's optional outputs:
// trainer.validation_data_dir (every validation rollout as JSONL),
// trainer.generations_to_log_to_wandb.val (the first N validation
// generations, to <out>/val_generations/<step>.jsonl) and
// trainer.log_group_rv_table (per-group reward variance of each training
// batch, to <out>/group_rv_table.jsonl).
func outputDumps(t *config.Tree, outDir string, rollout starpo.RolloutFunc, step func() int) (starpo.RolloutFunc, error) {
	r := &reader{t: t}
	var valDir string
	var nGen int
	var rvTable bool
	r.str("trainer.validation_data_dir", &valDir)
	r.int("trainer.generations_to_log_to_wandb.val", &nGen)
	r.bool("trainer.log_group_rv_table", &rvTable)
	if err := r.err(); err != nil {
		return nil, err
	}
	if valDir != "" {
		rollout = starpo.DumpValidation(rollout, valDir, 0, step)
	}
	if nGen > 0 {
		rollout = starpo.DumpValidation(rollout, filepath.Join(outDir, "val_generations"), nGen, step)
	}
	if rvTable {
		rollout = starpo.LogGroupRV(rollout, filepath.Join(outDir, "group_rv_table.jsonl"), func() int { return step() + 1 })
	}
	return rollout, nil
}

// analysisRollout gives the trainer upstream's separate gradient-analysis
// rollout when trainer.gradient_analysis_mode is on and any of
// gradient_analysis_env_groups, _group_size (null: the training sizes) or
// _log_prefilter is set: envs of their own, drawn by the same policy.
func (j *job) analysisRollout(t *config.Tree, policy ragen.Policy) error {
	r := &reader{t: t}
	var mode, prefilter bool
	var groups, size *int64
	r.bool("trainer.gradient_analysis_mode", &mode)
	r.bool("trainer.gradient_analysis_log_prefilter", &prefilter)
	r.optInt64("trainer.gradient_analysis_env_groups", &groups)
	r.optInt64("trainer.gradient_analysis_group_size", &size)
	if err := r.err(); err != nil {
		return err
	}
	if !mode || (groups == nil && size == nil && !prefilter) {
		return nil
	}
	rc := j.rc
	train := rc.ESManager.Train
	g, n := train.EnvGroups, train.GroupSize
	if groups != nil {
		g = int(*groups)
	}
	if size != nil {
		n = int(*size)
	}
	if g < 1 || n < 1 {
		return fmt.Errorf("trainer.gradient_analysis_env_groups=%d, gradient_analysis_group_size=%d: want positive sizes", g, n)
	}
	// the training tags, their group counts scaled to g
	var ng []int
	total := 0
	for i, k := range train.EnvConfigs.NGroups {
		c := k * g / train.EnvGroups
		if i == len(train.EnvConfigs.NGroups)-1 {
			c = g - total
		}
		if c < 0 || (k > 0 && c == 0 && g >= len(train.EnvConfigs.NGroups)) {
			return fmt.Errorf("trainer.gradient_analysis_env_groups=%d does not split over the training tags %v (n_groups %v)", g, train.EnvConfigs.Tags, train.EnvConfigs.NGroups)
		}
		ng = append(ng, c)
		total += c
	}
	rc.ESManager.Train = ragen.EnvSetConfig{EnvGroups: g, GroupSize: n,
		EnvConfigs: ragen.EnvConfigs{Tags: train.EnvConfigs.Tags, NGroups: ng}}
	// no validation from this proxy: one env keeps it cheap
	rc.ESManager.Val = ragen.EnvSetConfig{EnvGroups: 1, GroupSize: 1,
		EnvConfigs: ragen.EnvConfigs{Tags: train.EnvConfigs.Tags[:1], NGroups: []int{1}}}
	var err error
	if j.gaProxy, err = ragen.NewAgentProxy(rc, j.tok, ragen.DefaultProvider(), policy); err != nil {
		return fmt.Errorf("gradient-analysis rollout: %w", err)
	}
	return j.trainer.SetGradientAnalysisRollout(j.gaProxy.RolloutWith, g, n, prefilter)
}
