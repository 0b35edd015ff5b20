package starpo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"ragen/torch"
)

// Sharded checkpoints of a data-parallel run. The step folder holds what a
// one-process checkpoint holds, except that each role whose optimizer is
// sharded has, instead of optim.safetensors, one file per rank:
//
//	global_step_N/actor/optim_shard_<r>_of_<W>.safetensors  exp_avg, exp_avg_sq: rank r's flat shard
//	global_step_N/shards.json                               the manifest (shardManifest)
//
// Every file is listed in checksums.sha256 as well. The parameters are
// replicated between steps, so rank 0 writes them whole (model.safetensors,
// the consolidated weights a Hugging Face export is made from). A sharded
// checkpoint loads at any world size, one process included: the moments are
// reassembled from the shards in rank order and re-split at the next update.
const (
	ShardManifestFile = "shards.json"
	shardManifestVers = 1
)

// shardManifest is shards.json.
type shardManifest struct {
	Version   int                   `json:"version"`
	WorldSize int                   `json:"world_size"`
	Roles     map[string]*shardRole `json:"roles"` // "actor", "critic"
}

// shardRole is the layout of one role's optimizer shards: the parameters
// flattened in order (ParamSizes), padded to WorldSize·ShardElems, rank r
// holding elements [r·ShardElems, (r+1)·ShardElems).
type shardRole struct {
	Numel      int64    `json:"numel"`
	ShardElems int64    `json:"shard_elems"`
	ParamSizes []int64  `json:"param_sizes"`
	DType      string   `json:"dtype"`
	Step       int64    `json:"optimizer_step"`
	Files      []string `json:"files"`  // by rank, relative to the step folder
	SHA256     []string `json:"sha256"` // by rank
}

// shardedCkpt is what the ranks wrote into the temporary step folder.
type shardedCkpt struct{ man shardManifest }

// optimizer returns the full optimizer to write for role and its step
// count: nil and the shards' step when the role is sharded.
func (sh *shardedCkpt) optimizer(role string, full *torch.AdamW) (*torch.AdamW, int64) {
	if sh != nil {
		if r := sh.man.Roles[role]; r != nil {
			return nil, r.Step
		}
	}
	return full, full.StepCount()
}

// writeManifest adds the shards' checksums to sums and writes shards.json.
func (sh *shardedCkpt) writeManifest(dir string, sums map[string]string) error {
	if sh == nil {
		return nil
	}
	for _, r := range sh.man.Roles {
		for i, f := range r.Files {
			sums[f] = r.SHA256[i]
		}
	}
	b, err := json.MarshalIndent(sh.man, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(dir, ShardManifestFile), b); err != nil {
		return err
	}
	sums[ShardManifestFile] = hexSum(b)
	return nil
}

// readShardManifest reads dir/shards.json (nil, nil when the checkpoint is
// not sharded).
func readShardManifest(dir string) (*shardManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ShardManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m shardManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ShardManifestFile, err)
	}
	if m.Version != shardManifestVers {
		return nil, fmt.Errorf("%s: version %d, want %d", ShardManifestFile, m.Version, shardManifestVers)
	}
	if m.WorldSize < 1 {
		return nil, fmt.Errorf("%s: world size %d", ShardManifestFile, m.WorldSize)
	}
	return &m, nil
}

// optimizer is the full optimizer readModel should fill for role: nil when
// the checkpoint holds the role's moments as shards.
func (m *shardManifest) optimizer(role string, full *torch.AdamW) *torch.AdamW {
	if m != nil && m.Roles[role] != nil {
		return nil
	}
	return full
}

// load fills opt's full moments of role from the shard files (no-op when
// the role is not sharded) and sets its step.
func (m *shardManifest) load(dir, role string, params []*torch.Tensor, opt *torch.AdamW, step int64) error {
	if m == nil || m.Roles[role] == nil {
		return nil
	}
	r := m.Roles[role]
	sizes := make([]int64, len(params))
	var numel int64
	for i, p := range params {
		sizes[i] = p.Numel()
		numel += sizes[i]
	}
	switch {
	case !slices.Equal(sizes, r.ParamSizes):
		return fmt.Errorf("%s: %s parameter sizes %v differ from the model's %v", ShardManifestFile, role, r.ParamSizes, sizes)
	case r.Numel != numel || r.ShardElems*int64(m.WorldSize) < numel || r.ShardElems < 0:
		return fmt.Errorf("%s: %s: %d elements in %d shards of %d do not cover the model's %d", ShardManifestFile, role, r.Numel, m.WorldSize, r.ShardElems, numel)
	case len(r.Files) != m.WorldSize:
		return fmt.Errorf("%s: %s lists %d shard files for world size %d", ShardManifestFile, role, len(r.Files), m.WorldSize)
	}
	flat := map[string][]byte{}
	var dt torch.DType
	for rank, f := range r.Files {
		if strings.Contains(f, "..") || filepath.IsAbs(f) {
			return fmt.Errorf("%s: bad shard path %q", ShardManifestFile, f)
		}
		path := filepath.Join(dir, filepath.FromSlash(f))
		st, err := ReadSafetensors(path)
		if err != nil {
			return fmt.Errorf("shard of rank %d: %w", rank, err)
		}
		for _, name := range []string{"exp_avg", "exp_avg_sq"} {
			e, ok := st[name]
			if !ok {
				return fmt.Errorf("%s: no tensor %q", path, name)
			}
			if !slices.Equal(e.Shape, []int64{r.ShardElems}) {
				return fmt.Errorf("%s: %s has shape %v, the manifest says [%d]", path, name, e.Shape, r.ShardElems)
			}
			if rank > 0 && e.DType != dt {
				return fmt.Errorf("%s: %s is %v, rank 0's shard %v", path, name, e.DType, dt)
			}
			dt = e.DType
			if j := firstNonFinite(e.Data, e.DType); j >= 0 {
				return fmt.Errorf("%s: %s element %d is not finite (NaN or Inf): this checkpoint cannot be resumed", path, name, j)
			}
			flat[name] = append(flat[name], e.Data...)
		}
	}
	ms, vs, _ := opt.State()
	ds := int64(dt.Size())
	err := torch.NoGrad(func() error {
		return withScope(func(s *torch.Scope) error {
			for _, p := range []struct {
				data []byte
				dst  []*torch.Tensor
			}{{flat["exp_avg"], ms}, {flat["exp_avg_sq"], vs}} {
				var off int64
				for i, n := range sizes {
					src := s.Own(torch.FromBytes(p.data[off*ds:(off+n)*ds], dt, p.dst[i].Shape()...))
					s.CopyInto(p.dst[i], src)
					off += n
				}
			}
			return s.Err()
		})
	})
	if err != nil {
		return err
	}
	opt.SetStep(step)
	return nil
}

// dpSave writes the step's checkpoint; in a data-parallel run every rank
// must call it. Rank 0 creates the temporary step folder, each rank
// writes its optimizer shards into it, rank 0 adds the parameters, the
// trainer state and the manifest with every shard's checksum and renames
// the folder; every rank then learns whether all of that succeeded.
// Roles that have not been updated yet still hold their full (replicated)
// optimizer, which rank 0 writes as one process would.
func (t *Trainer) dpSave() error {
	d := t.dp
	if d == nil {
		return t.SaveCheckpoint()
	}
	rank, world := d.g.Rank(), d.g.Size()
	// 1. the temporary folder's name, from rank 0
	var tmp string
	var err error
	msg := []byte{}
	if rank == 0 {
		if tmp, err = t.checkpointTemp(); err != nil {
			msg = []byte("\x00" + err.Error())
		} else {
			defer os.RemoveAll(tmp) // no-op after the rename
			msg = []byte(tmp)
		}
	}
	parts, err := d.g.AllGatherBytes(d.ctx, msg)
	if err != nil {
		return err
	}
	if name := string(parts[0]); strings.HasPrefix(name, "\x00") || name == "" {
		return fmt.Errorf("starpo: checkpoint: rank 0: %s", strings.TrimPrefix(name, "\x00"))
	} else {
		tmp = name
	}
	// 2. this rank's shards
	type shardReport struct {
		Sums map[string]string `json:"sums"` // role → sha256
		Err  string            `json:"err,omitempty"`
	}
	rep := shardReport{Sums: map[string]string{}}
	roles := []string{}
	for _, role := range []string{"actor", "critic"} {
		if d.sharded[role] != nil {
			roles = append(roles, role)
		}
	}
	for _, role := range roles {
		_, m, v, _ := d.sharded[role].Shard()
		f := shardFile(role, rank, world)
		if err := os.MkdirAll(filepath.Join(tmp, role), 0o755); err != nil {
			rep.Err = err.Error()
			break
		}
		sum, err := writeSafetensors(filepath.Join(tmp, filepath.FromSlash(f)), []NamedTensor{{Name: "exp_avg", T: m}, {Name: "exp_avg_sq", T: v}}, true)
		if err != nil {
			rep.Err = fmt.Sprintf("%s optimizer shard: %v", role, err)
			break
		}
		rep.Sums[role] = sum
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if parts, err = d.g.AllGatherBytes(d.ctx, b); err != nil {
		return err
	}
	// 3. rank 0 completes and commits the checkpoint
	if rank == 0 {
		sh := &shardedCkpt{man: shardManifest{Version: shardManifestVers, WorldSize: world, Roles: map[string]*shardRole{}}}
		reps := make([]shardReport, world)
		for r, p := range parts {
			if err == nil {
				if uerr := json.Unmarshal(p, &reps[r]); uerr != nil {
					err = fmt.Errorf("starpo: checkpoint: report of rank %d: %w", r, uerr)
				} else if reps[r].Err != "" {
					err = fmt.Errorf("starpo: checkpoint: rank %d: %s", r, reps[r].Err)
				}
			}
		}
		for _, role := range roles {
			o := d.sharded[role]
			sr := &shardRole{Numel: o.Numel(), ShardElems: o.ShardElems(), DType: o.DType().String(), Step: o.StepCount()}
			params := t.deps.Actor.Trainable()
			if role == "critic" {
				params = t.deps.Critic.Trainable()
			}
			for _, p := range params {
				sr.ParamSizes = append(sr.ParamSizes, p.Numel())
			}
			for r := range world {
				sr.Files = append(sr.Files, shardFile(role, r, world))
				sr.SHA256 = append(sr.SHA256, reps[r].Sums[role])
			}
			sh.man.Roles[role] = sr
		}
		if err == nil {
			err = t.commitCheckpoint(tmp, sh)
		}
	}
	// 4. every rank learns the outcome
	ok := 1.0
	if err != nil {
		ok = 0
	}
	all, gerr := d.g.AllGatherFloat64s(d.ctx, []float64{ok})
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	if err == nil && slices.Contains(all, 0) {
		q := slices.Index(all, 0)
		err = fmt.Errorf("starpo: checkpoint of step %d failed on rank %d (see its log)", t.st.Step, q)
	}
	return err
}

// shardFile is the path of a rank's optimizer shard in a step folder.
func shardFile(role string, rank, world int) string {
	return fmt.Sprintf("%s/optim_shard_%d_of_%d.safetensors", role, rank, world)
}
