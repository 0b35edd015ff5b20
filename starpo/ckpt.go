package starpo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"ragen/torch"
)

// Checkpoint layout under trainer.default_local_dir (veRL's names where it
// has them):
//
//	global_step_N/actor/model.safetensors   trainable parameters by index (param.<i>)
//	global_step_N/actor/optim.safetensors   AdamW moments (exp_avg.<i>, exp_avg_sq.<i>)
//	global_step_N/critic/...                the same for the critic
//	global_step_N/trainer_state.json        step, counters, scheduler, early-stop and extra state
//	global_step_N/checksums.sha256          SHA-256 of every file above (sha256sum -c format)
//	global_step_N/shards.json               data-parallel runs: optimizer shard layout (dist_ckpt.go)
//	latest_checkpointed_iteration.txt       N of the newest complete checkpoint
//
// Resuming checks every file against checksums.sha256 before loading
// anything. A corrupt checkpoint is an error naming the file; with
// resume_mode=auto the trainer then falls back to the newest intact older
// checkpoint and says so (Logger's Warn when it has one, else stderr).
// Checkpoints written before checksums existed load without that check;
// every checkpoint's weights and optimizer moments are checked to be finite
// on load, as on save.
//
// A step folder is written under a temporary name and renamed when complete,
// and the tracker file is replaced by rename, so a run killed at any moment
// leaves either the previous or the new checkpoint, never a partial one.
const (
	TrackerFile    = "latest_checkpointed_iteration.txt"
	StateFile      = "trainer_state.json"
	stepDirPrefix  = "global_step_"
	modelFile      = "model.safetensors"
	optimFile      = "optim.safetensors"
	ChecksumFile   = "checksums.sha256"
	checkpointVers = 1
)

// checkpointState is trainer_state.json.
type checkpointState struct {
	Version     int               `json:"version"`
	State       trainState        `json:"trainer"`
	ActorOptim  int64             `json:"actor_optimizer_step"`
	CriticOptim int64             `json:"critic_optimizer_step"`
	Extra       map[string][]byte `json:"extra,omitempty"` // Deps.State by name
}

// StepDir is the folder of the checkpoint of step n.
func (t *Trainer) StepDir(n int) string {
	return filepath.Join(t.cfg.Trainer.DefaultLocalDir, fmt.Sprintf("%s%d", stepDirPrefix, n))
}

// SaveCheckpoint writes the checkpoint of the current step atomically and
// prunes old ones beyond max_actor_ckpt_to_keep.
func (t *Trainer) SaveCheckpoint() error {
	tmp, err := t.checkpointTemp()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	return t.commitCheckpoint(tmp, nil)
}

// checkpointTemp creates the temporary folder a checkpoint is written in.
func (t *Trainer) checkpointTemp() (string, error) {
	root := t.cfg.Trainer.DefaultLocalDir
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("starpo: checkpoint: %w", err)
	}
	removeStaleTemps(root)
	tmp, err := os.MkdirTemp(root, ".tmp-"+stepDirPrefix)
	if err != nil {
		return "", fmt.Errorf("starpo: checkpoint: %w", err)
	}
	return tmp, nil
}

// commitCheckpoint writes the checkpoint into tmp (sh: the optimizer
// shards the ranks of a data-parallel run wrote there, nil in one
// process), renames it to its step folder, updates the tracker and prunes.
func (t *Trainer) commitCheckpoint(tmp string, sh *shardedCkpt) error {
	root := t.cfg.Trainer.DefaultLocalDir
	if err := t.writeCheckpoint(tmp, sh); err != nil {
		return fmt.Errorf("starpo: checkpoint step %d: %w", t.st.Step, err)
	}
	final := t.StepDir(t.st.Step)
	if _, err := os.Stat(final); err == nil {
		old := final + ".old"
		_ = os.RemoveAll(old)
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("starpo: checkpoint: %w", err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("starpo: checkpoint: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(root, TrackerFile), []byte(strconv.Itoa(t.st.Step))); err != nil {
		return fmt.Errorf("starpo: checkpoint tracker: %w", err)
	}
	return t.prune()
}

func (t *Trainer) writeCheckpoint(dir string, sh *shardedCkpt) error {
	sums := map[string]string{}
	actorOpt, actorStep := sh.optimizer("actor", t.actorOpt)
	if err := writeModel(dir, "actor", t.deps.Actor.Trainable(), actorOpt, sums); err != nil {
		return err
	}
	cs := checkpointState{Version: checkpointVers, State: t.st, ActorOptim: actorStep}
	if t.deps.Critic != nil {
		criticOpt, criticStep := sh.optimizer("critic", t.criticOpt)
		if err := writeModel(dir, "critic", t.deps.Critic.Trainable(), criticOpt, sums); err != nil {
			return err
		}
		cs.CriticOptim = criticStep
	}
	if err := sh.writeManifest(dir, sums); err != nil {
		return err
	}
	if len(t.deps.State) > 0 {
		cs.Extra = map[string][]byte{}
		for name, s := range t.deps.State {
			b, err := s.MarshalState()
			if err != nil {
				return fmt.Errorf("state %q: %w", name, err)
			}
			cs.Extra[name] = b
		}
	}
	data, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(dir, StateFile), data); err != nil {
		return err
	}
	sums[StateFile] = hexSum(data)
	return writeChecksums(dir, sums)
}

// writeModel writes dir/sub/{model,optim}.safetensors, refusing non-finite
// values (a NaN or Inf weight would poison every run resumed from it), and
// records each file's SHA-256 in sums under "sub/name".
func writeModel(dir, sub string, params []*torch.Tensor, opt *torch.AdamW, sums map[string]string) error {
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
		return err
	}
	named := make([]NamedTensor, len(params))
	for i, p := range params {
		named[i] = NamedTensor{Name: fmt.Sprintf("param.%d", i), T: p}
	}
	sum, err := writeSafetensors(filepath.Join(dir, sub, modelFile), named, true)
	if err != nil {
		return fmt.Errorf("%s: %w", sub, err)
	}
	sums[sub+"/"+modelFile] = sum
	if opt == nil {
		return nil // sharded optimizer state: written by the ranks (dist_ckpt.go)
	}
	m, v, _ := opt.State()
	var moments []NamedTensor
	for i := range m {
		moments = append(moments, NamedTensor{Name: fmt.Sprintf("exp_avg.%d", i), T: m[i]},
			NamedTensor{Name: fmt.Sprintf("exp_avg_sq.%d", i), T: v[i]})
	}
	sum, err = writeSafetensors(filepath.Join(dir, sub, optimFile), moments, true)
	if err != nil {
		return fmt.Errorf("%s optimizer: %w", sub, err)
	}
	sums[sub+"/"+optimFile] = sum
	return nil
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// writeChecksums writes dir/checksums.sha256 in sha256sum's format, files
// sorted by name.
func writeChecksums(dir string, sums map[string]string) error {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return writeFileSync(filepath.Join(dir, ChecksumFile), []byte(b.String()))
}

// CorruptCheckpointError says a checkpoint file is missing or does not
// match its recorded checksum.
type CorruptCheckpointError struct {
	Dir, File, Reason string
}

func (e *CorruptCheckpointError) Error() string {
	return fmt.Sprintf("checkpoint %s is corrupt: %s %s", e.Dir, e.File, e.Reason)
}

// VerifyCheckpoint checks every file of a global_step_N folder against its
// checksums.sha256. A critic folder that max_critic_ckpt_to_keep pruned is
// not an error (loading a critic from it is). A folder without
// checksums.sha256 (written before checksums existed) passes if its
// trainer_state.json is there.
func VerifyCheckpoint(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, ChecksumFile))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, StateFile)); err != nil {
			return &CorruptCheckpointError{Dir: dir, File: StateFile, Reason: "is missing"}
		}
		return nil
	}
	if err != nil {
		return &CorruptCheckpointError{Dir: dir, File: ChecksumFile, Reason: "is unreadable: " + err.Error()}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	seenState := false
	for i, line := range lines {
		want, name, ok := strings.Cut(line, "  ")
		if !ok || len(want) != 64 || name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
			return &CorruptCheckpointError{Dir: dir, File: ChecksumFile, Reason: fmt.Sprintf("line %d is malformed", i+1)}
		}
		seenState = seenState || name == StateFile
		if sub, _, found := strings.Cut(name, "/"); found && sub == "critic" {
			if _, err := os.Stat(filepath.Join(dir, sub)); errors.Is(err, os.ErrNotExist) {
				continue // pruned by max_critic_ckpt_to_keep
			}
		}
		got, err := fileSum(filepath.Join(dir, filepath.FromSlash(name)))
		if errors.Is(err, os.ErrNotExist) {
			return &CorruptCheckpointError{Dir: dir, File: name, Reason: "is missing"}
		}
		if err != nil {
			return &CorruptCheckpointError{Dir: dir, File: name, Reason: "is unreadable: " + err.Error()}
		}
		if got != want {
			return &CorruptCheckpointError{Dir: dir, File: name, Reason: "does not match its checksum (changed or truncated after it was written)"}
		}
	}
	if !seenState {
		return &CorruptCheckpointError{Dir: dir, File: ChecksumFile, Reason: "does not list " + StateFile}
	}
	return nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// prune removes the oldest step folders beyond max_actor_ckpt_to_keep (nil
// or 0 keeps all) and the critic sub-folders beyond max_critic_ckpt_to_keep.
func (t *Trainer) prune() error {
	steps, err := listSteps(t.cfg.Trainer.DefaultLocalDir)
	if err != nil {
		return err
	}
	keep := func(k *int, f func(n int) error) error {
		if k == nil || *k <= 0 || len(steps) <= *k {
			return nil
		}
		for _, n := range steps[:len(steps)-*k] {
			if err := f(n); err != nil {
				return err
			}
		}
		return nil
	}
	if err := keep(t.cfg.Trainer.MaxCriticCkptToKeep, func(n int) error {
		return os.RemoveAll(filepath.Join(t.StepDir(n), "critic"))
	}); err != nil {
		return err
	}
	return keep(t.cfg.Trainer.MaxActorCkptToKeep, func(n int) error { return os.RemoveAll(t.StepDir(n)) })
}

// listSteps returns the step numbers of the complete checkpoints, ascending.
func listSteps(root string) ([]int, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var steps []int
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stepDirPrefix) {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), stepDirPrefix)); err == nil {
			steps = append(steps, n)
		}
	}
	sort.Ints(steps)
	return steps, nil
}

// resume loads the checkpoint trainer.resume_mode selects, if any.
func (t *Trainer) resume() error {
	tr := t.cfg.Trainer
	var dir string
	switch tr.ResumeMode {
	case ResumeDisable:
		return nil
	case ResumePath:
		dir = tr.ResumeFromPath
		if !strings.HasPrefix(filepath.Base(filepath.Clean(dir)), stepDirPrefix) {
			return fmt.Errorf("starpo: trainer.resume_from_path %q must name a %sN folder", dir, stepDirPrefix)
		}
	default:
		b, err := os.ReadFile(filepath.Join(tr.DefaultLocalDir, TrackerFile))
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing to resume: train from scratch
		}
		if err != nil {
			return fmt.Errorf("starpo: resume: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("starpo: resume: %s holds %q, not a step number", TrackerFile, strings.TrimSpace(string(b)))
		}
		return t.resumeAuto(n)
	}
	if err := VerifyCheckpoint(dir); err != nil {
		return fmt.Errorf("starpo: resume: %w", err)
	}
	return t.LoadCheckpoint(dir)
}

// Warner is an optional Logger method: the trainer reports conditions a
// user should know about (such as a resume falling back past a corrupt
// checkpoint) through it, or on stderr when the logger has none.
type Warner interface {
	Warn(msg string)
}

func (t *Trainer) warn(msg string) {
	if w, ok := t.deps.Logger.(Warner); ok {
		w.Warn(msg)
		return
	}
	fmt.Fprintln(os.Stderr, "starpo: warning:", msg)
}

// resumeAuto loads the checkpoint of step n, or when it is corrupt the
// newest intact older one, warning about each one skipped.
func (t *Trainer) resumeAuto(n int) error {
	steps, err := listSteps(t.cfg.Trainer.DefaultLocalDir)
	if err != nil {
		return fmt.Errorf("starpo: resume: %w", err)
	}
	candidates := []int{n}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] < n {
			candidates = append(candidates, steps[i])
		}
	}
	var skipped []error
	for _, s := range candidates {
		dir := t.StepDir(s)
		err := VerifyCheckpoint(dir)
		if err == nil {
			if len(skipped) > 0 {
				t.warn(fmt.Sprintf("resuming from %s, the newest intact checkpoint, instead of step %d (%v)", dir, n, errors.Join(skipped...)))
			}
			return t.LoadCheckpoint(dir)
		}
		skipped = append(skipped, err)
	}
	return fmt.Errorf("starpo: resume: no intact checkpoint in %s (set trainer.resume_mode=disable to start over): %w",
		t.cfg.Trainer.DefaultLocalDir, errors.Join(skipped...))
}

// LoadCheckpoint restores the trainer, models and optimizers from a
// global_step_N folder.
func (t *Trainer) LoadCheckpoint(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return fmt.Errorf("starpo: load checkpoint: %w", err)
	}
	var cs checkpointState
	if err := json.Unmarshal(data, &cs); err != nil {
		return fmt.Errorf("starpo: load checkpoint %s: %w", StateFile, err)
	}
	if cs.Version != checkpointVers {
		return fmt.Errorf("starpo: load checkpoint: version %d, want %d", cs.Version, checkpointVers)
	}
	man, err := readShardManifest(dir)
	if err != nil {
		return fmt.Errorf("starpo: load checkpoint: %w", err)
	}
	if err := readModel(filepath.Join(dir, "actor"), t.deps.Actor.Trainable(), man.optimizer("actor", t.actorOpt), cs.ActorOptim); err != nil {
		return fmt.Errorf("starpo: load checkpoint actor: %w", err)
	}
	if err := man.load(dir, "actor", t.deps.Actor.Trainable(), t.actorOpt, cs.ActorOptim); err != nil {
		return fmt.Errorf("starpo: load checkpoint actor: %w", err)
	}
	if t.deps.Critic != nil {
		if err := readModel(filepath.Join(dir, "critic"), t.deps.Critic.Trainable(), man.optimizer("critic", t.criticOpt), cs.CriticOptim); err != nil {
			return fmt.Errorf("starpo: load checkpoint critic: %w", err)
		}
		if err := man.load(dir, "critic", t.deps.Critic.Trainable(), t.criticOpt, cs.CriticOptim); err != nil {
			return fmt.Errorf("starpo: load checkpoint critic: %w", err)
		}
	}
	for name, s := range t.deps.State {
		b, ok := cs.Extra[name]
		if !ok {
			return fmt.Errorf("starpo: load checkpoint: no state %q", name)
		}
		if err := s.UnmarshalState(b); err != nil {
			return fmt.Errorf("starpo: load checkpoint state %q: %w", name, err)
		}
	}
	if cs.State.LowVal == nil {
		cs.State.LowVal = map[string]int{}
	}
	t.st = cs.State
	if t.klCtrl != nil {
		t.klCtrl.Value = float64(t.st.KLCoef)
	}
	return nil
}

func readModel(dir string, params []*torch.Tensor, opt *torch.AdamW, optStep int64) error {
	names := make([]string, len(params))
	for i := range params {
		names[i] = fmt.Sprintf("param.%d", i)
	}
	if err := loadInto(filepath.Join(dir, modelFile), names, params); err != nil {
		return err
	}
	if opt == nil {
		return nil // sharded optimizer state (shardManifest.load)
	}
	m, v, _ := opt.State()
	var onames []string
	var dst []*torch.Tensor
	for i := range m {
		onames = append(onames, fmt.Sprintf("exp_avg.%d", i), fmt.Sprintf("exp_avg_sq.%d", i))
		dst = append(dst, m[i], v[i])
	}
	if err := loadInto(filepath.Join(dir, optimFile), onames, dst); err != nil {
		return err
	}
	opt.SetStep(optStep)
	return nil
}

// loadInto copies the named tensors of a safetensors file into dst in place.
func loadInto(path string, names []string, dst []*torch.Tensor) error {
	f, err := ReadSafetensors(path)
	if err != nil {
		return err
	}
	if len(f) != len(names) {
		return fmt.Errorf("%s holds %d tensors, the model has %d", path, len(f), len(names))
	}
	// Every tensor is checked before any is copied, so that a refused
	// checkpoint leaves the model as it was. Finiteness is checked here as
	// on save: a checkpoint without checksums.sha256 (or one edited and
	// re-summed) is not otherwise checked, and a NaN weight would fail
	// later in sampling with an unclear torch error.
	for i, name := range names {
		e, ok := f[name]
		if !ok {
			return fmt.Errorf("%s: no tensor %q", path, name)
		}
		if !slicesEqual(e.Shape, dst[i].Shape()) {
			return fmt.Errorf("%s: %s has shape %v, the model's is %v", path, name, e.Shape, dst[i].Shape())
		}
		if j := firstNonFinite(e.Data, e.DType); j >= 0 {
			return fmt.Errorf("%s: %s element %d is not finite (NaN or Inf): this checkpoint cannot be resumed", path, name, j)
		}
	}
	return torch.NoGrad(func() error {
		return withScope(func(s *torch.Scope) error {
			for i, name := range names {
				e := f[name]
				src := s.Own(torch.FromBytes(e.Data, e.DType, e.Shape...))
				s.CopyInto(dst[i], src)
			}
			return s.Err()
		})
	})
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Export writes the trained policy as a Hugging Face folder through the
// actor's Save (llm.Model implements it).
func (t *Trainer) Export(dir string) error {
	s, ok := t.deps.Actor.(Saver)
	if !ok {
		return fmt.Errorf("starpo: export: the actor (%T) cannot write a Hugging Face folder (no Save method)", t.deps.Actor)
	}
	if err := s.Save(dir); err != nil {
		return fmt.Errorf("starpo: export: %w", err)
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := writeFileSync(tmp, data); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// NamedTensor is a tensor with its safetensors name.
type NamedTensor struct {
	Name string
	T    *torch.Tensor
}

// SafeEntry is one tensor read from a safetensors file.
type SafeEntry struct {
	DType torch.DType
	Shape []int64
	Data  []byte
}

var safeDTypes = map[torch.DType]string{torch.Float32: "F32", torch.Float64: "F64", torch.BFloat16: "BF16",
	torch.Int64: "I64", torch.Int32: "I32", torch.Bool: "BOOL"}

type safeHeader struct {
	DType   string   `json:"dtype"`
	Shape   []int64  `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// WriteSafetensors writes tensors in the safetensors format (8-byte
// little-endian header length, JSON header, raw little-endian data), in
// the given order.
func WriteSafetensors(path string, ts []NamedTensor) error {
	_, err := writeSafetensors(path, ts, false)
	return err
}

// writeSafetensors is WriteSafetensors returning the file's SHA-256, and
// with finite set refusing NaN or infinite floating-point values.
func writeSafetensors(path string, ts []NamedTensor, finite bool) (string, error) {
	header := map[string]any{}
	var blobs [][]byte
	off := int64(0)
	for _, nt := range ts {
		code, ok := safeDTypes[nt.T.DType()]
		if !ok {
			return "", fmt.Errorf("safetensors: %s: unsupported dtype %v", nt.Name, nt.T.DType())
		}
		b, err := torch.Bytes(nt.T, nt.T.DType())
		if err != nil {
			return "", fmt.Errorf("safetensors: %s: %w", nt.Name, err)
		}
		if finite {
			if i := firstNonFinite(b, nt.T.DType()); i >= 0 {
				return "", fmt.Errorf("refusing to save %s: element %d is not finite (NaN or Inf; check optim.lr and the loss)", nt.Name, i)
			}
		}
		header[nt.Name] = safeHeader{DType: code, Shape: nt.T.Shape(), Offsets: [2]int64{off, off + int64(len(b))}}
		off += int64(len(b))
		blobs = append(blobs, b)
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	w := io.MultiWriter(f, h)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hj)))
	werr := func() error {
		if _, err := w.Write(n[:]); err != nil {
			return err
		}
		if _, err := w.Write(hj); err != nil {
			return err
		}
		for _, b := range blobs {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return f.Sync()
	}()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", werr
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// firstNonFinite is the index of the first NaN or infinite element of
// little-endian data of a floating-point dtype, or -1.
func firstNonFinite(b []byte, dt torch.DType) int {
	switch dt {
	case torch.Float32:
		for i := 0; i+4 <= len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:])&0x7f800000 == 0x7f800000 {
				return i / 4
			}
		}
	case torch.Float64:
		for i := 0; i+8 <= len(b); i += 8 {
			if binary.LittleEndian.Uint64(b[i:])&0x7ff0000000000000 == 0x7ff0000000000000 {
				return i / 8
			}
		}
	case torch.BFloat16:
		for i := 0; i+2 <= len(b); i += 2 {
			if binary.LittleEndian.Uint16(b[i:])&0x7f80 == 0x7f80 {
				return i / 2
			}
		}
	}
	return -1
}

// ReadSafetensors reads every tensor of a safetensors file, checking the
// header against the data.
func ReadSafetensors(path string) (map[string]SafeEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var n [8]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		return nil, fmt.Errorf("safetensors %s: header length: %w", path, err)
	}
	hl := binary.LittleEndian.Uint64(n[:])
	if hl > uint64(st.Size())-8 {
		return nil, fmt.Errorf("safetensors %s: header length %d exceeds the file size %d", path, hl, st.Size())
	}
	hj := make([]byte, hl)
	if _, err := io.ReadFull(f, hj); err != nil {
		return nil, fmt.Errorf("safetensors %s: header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hj, &raw); err != nil {
		return nil, fmt.Errorf("safetensors %s: header: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	codes := map[string]torch.DType{}
	for d, c := range safeDTypes {
		codes[c] = d
	}
	out := map[string]SafeEntry{}
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var h safeHeader
		if err := json.Unmarshal(msg, &h); err != nil {
			return nil, fmt.Errorf("safetensors %s: %s: %w", path, name, err)
		}
		dt, ok := codes[h.DType]
		if !ok {
			return nil, fmt.Errorf("safetensors %s: %s: unsupported dtype %q", path, name, h.DType)
		}
		count := int64(1)
		for _, d := range h.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/8/d) {
				return nil, fmt.Errorf("safetensors %s: %s: bad shape %v", path, name, h.Shape)
			}
			count *= d
		}
		lo, hi := h.Offsets[0], h.Offsets[1]
		if lo < 0 || hi < lo || hi > int64(len(data)) || hi-lo != count*int64(dt.Size()) {
			return nil, fmt.Errorf("safetensors %s: %s: offsets [%d, %d] do not fit shape %v of %s in %d data bytes", path, name, lo, hi, h.Shape, h.DType, len(data))
		}
		out[name] = SafeEntry{DType: dt, Shape: h.Shape, Data: data[lo:hi]}
	}
	return out, nil
}

// GeneratorState adapts a libtorch generator (e.g. a sampler's) to
// Stateful, so its state travels in checkpoints.
type GeneratorState struct{ G *torch.Generator }

// MarshalState returns the generator state.
func (g GeneratorState) MarshalState() ([]byte, error) { return g.G.State() }

// UnmarshalState restores a state from MarshalState.
func (g GeneratorState) UnmarshalState(b []byte) error { return g.G.SetState(b) }

// removeStaleTemps deletes temporary step folders a killed run left behind.
func removeStaleTemps(root string) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), ".tmp-"+stepDirPrefix) {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}
