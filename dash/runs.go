package dash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"ragen/ragen"
	"ragen/track"
)

// root is one folder given on the command line.
type root struct {
	path string // absolute, symlinks resolved
	name string
}

// run is one run folder (a root, or a sub-folder of a sweep root).
type run struct {
	ID    string `json:"id"`    // "r0", "r0/sub"
	Name  string `json:"name"`  // folder name(s) for people
	Sweep string `json:"sweep"` // id of the sweep root, "" for a plain run
	dir   string
	root  string // the folder given on the command line it lies in
}

// runSet resolves run ids to folders; the listing is refreshed on every
// request, so a sweep's runs appear while it trains.
type runSet struct {
	roots []root
	mu    sync.Mutex
}

func newRunSet(dirs []string) (*runSet, error) {
	rs := &runSet{}
	seen := map[string]bool{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("dash: run folder %q: %w", d, err)
		}
		if abs, err = filepath.EvalSymlinks(abs); err != nil {
			return nil, fmt.Errorf("dash: run folder %q: %w", d, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("dash: run folder %q: %w", d, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("dash: %q is not a folder (give run folders: the trainer's trainer.default_local_dir)", d)
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		rs.roots = append(rs.roots, root{path: abs, name: filepath.Base(abs)})
	}
	return rs, nil
}

func isRunDir(dir string) bool {
	for _, f := range []string{"metrics.jsonl", "rollouts"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return len(trajFiles(dir)) > 0
}

var subName = regexp.MustCompile(`^[A-Za-z0-9_.=,+-][A-Za-z0-9_.=,+ -]*$`)

// list returns every run: a root with metrics (or rollouts) is a run; a root
// without is a sweep whose direct sub-folders with metrics are its runs.
func (rs *runSet) list() []run {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []run
	for i, r := range rs.roots {
		id := "r" + strconv.Itoa(i)
		if isRunDir(r.path) {
			out = append(out, run{ID: id, Name: r.name, dir: r.path, root: r.path})
			continue
		}
		ents, err := os.ReadDir(r.path)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !subName.MatchString(e.Name()) {
				continue
			}
			d := filepath.Join(r.path, e.Name())
			if isRunDir(d) {
				out = append(out, run{ID: id + "/" + e.Name(), Name: r.name + "/" + e.Name(), Sweep: id, dir: d, root: r.path})
			}
		}
	}
	return out
}

// get resolves a run id; only ids that list returns resolve.
func (rs *runSet) get(id string) (run, error) {
	if id == "" {
		return run{}, badRequest("missing run id (?run=)")
	}
	for _, r := range rs.list() {
		if r.ID == id {
			return r, nil
		}
	}
	return run{}, notFound("no run %q", id)
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	type runInfo struct {
		run
		Steps      int  `json:"steps"`
		HasFilter  bool `json:"has_filter"`
		Rollouts   int  `json:"rollouts"`
		HasMetrics bool `json:"has_metrics"`
	}
	var out []runInfo
	for _, rn := range s.runs.list() {
		ri := runInfo{run: rn}
		if recs, err := readMetrics(rn); err == nil {
			ri.HasMetrics = true
			ri.Steps = len(recs)
		}
		fs := rolloutFiles(rn.dir)
		for _, f := range fs {
			if f.Kind == "filter" {
				ri.HasFilter = true
			} else {
				ri.Rollouts++
			}
		}
		out = append(out, ri)
	}
	if out == nil {
		out = []runInfo{}
	}
	sweeps := []map[string]string{}
	for i, rt := range s.runs.roots {
		if !isRunDir(rt.path) {
			sweeps = append(sweeps, map[string]string{"id": "r" + strconv.Itoa(i), "name": rt.name})
		}
	}
	writeJSON(w, map[string]any{"runs": out, "sweeps": sweeps})
}

// readWithin reads path after checking that, symlinks resolved, it lies
// inside root: a link in a run folder cannot point the server elsewhere.
func readWithin(root, path string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return nil, &httpError{http.StatusForbidden, fmt.Sprintf("%s points outside the run folders", filepath.Base(path))}
	}
	return os.ReadFile(real)
}

// readMetrics reads metrics.jsonl up to its last complete line (a run that
// is training may be writing the next one).
func readMetrics(rn run) ([]track.Record, error) {
	b, err := readWithin(rn.root, filepath.Join(rn.dir, "metrics.jsonl"))
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	return track.DecodeJSONL(bytes.NewReader(b))
}

// jsonNum is a float that encodes NaN and ±Inf as null.
type jsonNum float64

func (f jsonNum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

type metricRecord struct {
	Step int                `json:"step"`
	Data map[string]jsonNum `json:"data"`
}

// apiMetrics returns a run's records after step ?since= (all by default).
func (s *Server) apiMetrics(w http.ResponseWriter, r *http.Request) {
	rn, err := s.runs.get(r.URL.Query().Get("run"))
	if err != nil {
		writeErr(w, err)
		return
	}
	since := -1 << 62
	if v := r.URL.Query().Get("since"); v != "" {
		if since, err = strconv.Atoi(v); err != nil {
			writeErr(w, badRequest("since=%q: want an integer step", v))
			return
		}
	}
	recs, err := readMetrics(rn)
	if err != nil && !os.IsNotExist(err) {
		writeErr(w, fmt.Errorf("dash: %s/metrics.jsonl: %w", rn.Name, err))
		return
	}
	out := []metricRecord{}
	for _, rec := range recs {
		if rec.Step <= since {
			continue
		}
		d := make(map[string]jsonNum, len(rec.Data))
		for k, v := range rec.Data {
			d[k] = jsonNum(v)
		}
		out = append(out, metricRecord{Step: rec.Step, Data: d})
	}
	writeJSON(w, map[string]any{"run": rn.ID, "records": out})
}

// rolloutFile is one exported file of a run.
type rolloutFile struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // train, val, eval, filter
	Step int    `json:"step"` // -1 for eval files
}

var rolloutName = regexp.MustCompile(`^(train|val|filter)_step_(\d+)\.(jsonl|json)$`)

// rolloutFiles lists rollouts/*_step_N.* and the run folder's own
// trajectory JSONL files (ragen eval's val_rollouts_*.jsonl).
func rolloutFiles(dir string) []rolloutFile {
	var out []rolloutFile
	if ents, err := os.ReadDir(filepath.Join(dir, "rollouts")); err == nil {
		for _, e := range ents {
			m := rolloutName.FindStringSubmatch(e.Name())
			if m == nil || e.IsDir() || (m[1] == "filter") != (m[3] == "json") {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			out = append(out, rolloutFile{Name: e.Name(), Kind: m[1], Step: n})
		}
	}
	for _, f := range trajFiles(dir) {
		out = append(out, rolloutFile{Name: f, Kind: "eval", Step: -1})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Name < out[j].Name
	})
	return out
}

var evalName = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.jsonl$`)

// trajFiles are the top-level *.jsonl files of dir that are not metrics.
func trajFiles(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && e.Name() != "metrics.jsonl" && evalName.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// filePath resolves a file name of a run: only names that rolloutFiles
// lists, so nothing outside the run folder can be named.
func filePath(rn run, name string) (string, rolloutFile, error) {
	if name == "" {
		return "", rolloutFile{}, badRequest("missing file name (?file=)")
	}
	for _, f := range rolloutFiles(rn.dir) {
		if f.Name == name {
			if f.Kind == "eval" {
				return filepath.Join(rn.dir, name), f, nil
			}
			return filepath.Join(rn.dir, "rollouts", name), f, nil
		}
	}
	return "", rolloutFile{}, notFound("run %s has no file %q", rn.ID, name)
}

func (s *Server) apiRollouts(w http.ResponseWriter, r *http.Request) {
	rn, err := s.runs.get(r.URL.Query().Get("run"))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := []rolloutFile{}
	for _, f := range rolloutFiles(rn.dir) {
		if f.Kind != "filter" {
			out = append(out, f)
		}
	}
	writeJSON(w, map[string]any{"run": rn.ID, "files": out})
}

// Turn is one agent turn of a trajectory.
type Turn struct {
	State       string   `json:"state"`  // the env's rendering the agent saw
	Reward      *float64 `json:"reward"` // "(reward: x)" the export appended to the state, if any
	Response    string   `json:"response"`
	Think       string   `json:"think"`
	Answer      string   `json:"answer"`
	Actions     []string `json:"actions"`
	FormatError bool     `json:"format_error"` // no <answer> (or no <think> when thinking is on)
}

// Trajectory is one parsed JSONL record.
type Trajectory struct {
	ID          string             `json:"id"`
	EnvID       int                `json:"env_id"`
	GroupID     int                `json:"group_id"`
	Tag         string             `json:"tag"`
	NumTurns    int                `json:"num_turns"`
	TotalReward jsonNum            `json:"total_reward"`
	Success     bool               `json:"success"`
	FormatError bool               `json:"format_error"`
	Turns       []Turn             `json:"turns"`
	Final       string             `json:"final"` // the last state (after the last action), if any
	Metrics     map[string]jsonNum `json:"metrics"`
}

var (
	rewardSuffix = regexp.MustCompile(`\s*\(reward: ([^()]+)\)\s*$`)
	thinkRe      = regexp.MustCompile(`(?s)<think>(.*?)</think>`)
	answerRe     = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)
)

// parseTurns splits a record's messages into turns: each user message is a
// state, each assistant message the answer to the state before it.
func parseTurns(rec ragen.TrajectoryRecord) ([]Turn, string) {
	var turns []Turn
	var pending *Turn
	for _, m := range rec.Messages {
		switch m.Role {
		case "user", "system":
			if pending != nil { // a state with no answer: the final state
				turns = append(turns, *pending)
			}
			t := Turn{State: m.Content}
			if sm := rewardSuffix.FindStringSubmatchIndex(m.Content); sm != nil {
				if v, err := strconv.ParseFloat(strings.TrimSpace(m.Content[sm[2]:sm[3]]), 64); err == nil {
					t.Reward = &v
					t.State = m.Content[:sm[0]]
				}
			}
			pending = &t
		case "assistant":
			t := Turn{}
			if pending != nil {
				t = *pending
			}
			pending = nil
			t.Response = m.Content
			if tm := thinkRe.FindStringSubmatch(m.Content); tm != nil {
				t.Think = strings.TrimSpace(tm[1])
			}
			if am := answerRe.FindStringSubmatch(m.Content); am != nil {
				t.Answer = strings.TrimSpace(am[1])
				for _, a := range strings.Split(t.Answer, "||") {
					if a = strings.TrimSpace(a); a != "" {
						t.Actions = append(t.Actions, a)
					}
				}
			} else {
				t.FormatError = true
			}
			if t.Actions == nil {
				t.Actions = []string{}
				t.FormatError = true
			}
			turns = append(turns, t)
		}
	}
	final := ""
	if pending != nil {
		final = pending.State
	}
	return turns, final
}

func toTrajectory(rec ragen.TrajectoryRecord) Trajectory {
	md := rec.Metadata
	tr := Trajectory{ID: rec.CustomID, EnvID: md.EnvID, GroupID: md.GroupID, NumTurns: md.NumTurns,
		TotalReward: jsonNum(md.TotalReward), Success: md.Success, Metrics: map[string]jsonNum{}}
	tr.Turns, tr.Final = parseTurns(rec)
	if tr.Turns == nil {
		tr.Turns = []Turn{}
	}
	for k, v := range md.Metrics {
		tr.Metrics[k] = jsonNum(v)
		if tag, _, ok := strings.Cut(k, "/"); ok && tr.Tag == "" {
			tr.Tag = tag
		}
	}
	for _, t := range tr.Turns {
		tr.FormatError = tr.FormatError || t.FormatError
	}
	for k, v := range md.Metrics {
		if strings.HasSuffix(k, "/action_is_valid") && v < 1 {
			tr.FormatError = true
		}
	}
	return tr
}

// readTrajectories parses a JSONL file of trajectory records.
func readTrajectories(root, path string) ([]Trajectory, error) {
	data, err := readWithin(root, path)
	if err != nil {
		return nil, err
	}
	out := []Trajectory{}
	err = ragen.ReadTrajectories(bytes.NewReader(data), filepath.Base(path), func(_ int, rec ragen.TrajectoryRecord) error {
		out = append(out, toTrajectory(rec))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// apiTrajectories returns the trajectories of one file, filtered by
// env, group, tag, success (yes|no), format errors (yes|no) and a reward
// range; ?limit= caps the answer (default 500).
func (s *Server) apiTrajectories(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rn, err := s.runs.get(q.Get("run"))
	if err != nil {
		writeErr(w, err)
		return
	}
	path, f, err := filePath(rn, q.Get("file"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if f.Kind == "filter" {
		writeErr(w, badRequest("%s is a filter decision, not trajectories (see /api/filter)", f.Name))
		return
	}
	trs, err := readTrajectories(rn.root, path)
	if err != nil {
		writeErr(w, err)
		return
	}
	intArg := func(k string) (int, bool, error) {
		v := q.Get(k)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false, badRequest("%s=%q: want an integer", k, v)
		}
		return n, true, nil
	}
	floatArg := func(k string) (float64, bool, error) {
		v := q.Get(k)
		if v == "" {
			return 0, false, nil
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) {
			return 0, false, badRequest("%s=%q: want a number", k, v)
		}
		return x, true, nil
	}
	triArg := func(k string) (int, error) {
		switch q.Get(k) {
		case "", "any":
			return 0, nil
		case "yes", "true", "1":
			return 1, nil
		case "no", "false", "0":
			return -1, nil
		}
		return 0, badRequest("%s=%q: want yes, no or any", k, q.Get(k))
	}
	envID, hasEnv, e1 := intArg("env")
	group, hasGroup, e2 := intArg("group")
	limit, hasLimit, e3 := intArg("limit")
	rmin, hasMin, e4 := floatArg("reward_min")
	rmax, hasMax, e5 := floatArg("reward_max")
	succ, e6 := triArg("success")
	ferr, e7 := triArg("format_error")
	for _, e := range []error{e1, e2, e3, e4, e5, e6, e7} {
		if e != nil {
			writeErr(w, e)
			return
		}
	}
	if !hasLimit || limit <= 0 {
		limit = 500
	}
	tag := q.Get("tag")
	out := []Trajectory{}
	total, matched := len(trs), 0
	tags := map[string]bool{}
	for _, t := range trs {
		tags[t.Tag] = true
		if (hasEnv && t.EnvID != envID) || (hasGroup && t.GroupID != group) || (tag != "" && t.Tag != tag) ||
			(succ == 1 && !t.Success) || (succ == -1 && t.Success) ||
			(ferr == 1 && !t.FormatError) || (ferr == -1 && t.FormatError) ||
			(hasMin && float64(t.TotalReward) < rmin) || (hasMax && float64(t.TotalReward) > rmax) {
			continue
		}
		matched++
		if len(out) < limit {
			out = append(out, t)
		}
	}
	tagList := make([]string, 0, len(tags))
	for t := range tags {
		tagList = append(tagList, t)
	}
	sort.Strings(tagList)
	writeJSON(w, map[string]any{"run": rn.ID, "file": f, "total": total, "matched": matched, "tags": tagList, "trajectories": out})
}

// FilterGroup and FilterStep are the format of rollouts/filter_step_N.json:
// `ragen train` writes them, the dashboard reads them.
type FilterGroup struct {
	GroupID   int       `json:"group_id"`
	Rewards   []float64 `json:"rewards"`
	RewardStd *float64  `json:"reward_std"`
	Kept      bool      `json:"kept"`
}

type FilterStep struct {
	Step      int           `json:"step"`
	Strategy  string        `json:"strategy"`
	Value     float64       `json:"value"`
	Type      string        `json:"type"`
	Metric    string        `json:"metric"`
	Unchanged bool          `json:"unchanged"`
	Groups    []FilterGroup `json:"groups"`
}

func (s *Server) apiFilter(w http.ResponseWriter, r *http.Request) {
	rn, err := s.runs.get(r.URL.Query().Get("run"))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := []FilterStep{}
	for _, f := range rolloutFiles(rn.dir) {
		if f.Kind != "filter" {
			continue
		}
		b, err := readWithin(rn.root, filepath.Join(rn.dir, "rollouts", f.Name))
		if err != nil {
			writeErr(w, err)
			return
		}
		var fs FilterStep
		if err := json.Unmarshal(b, &fs); err != nil {
			writeErr(w, fmt.Errorf("dash: %s: %w", f.Name, err))
			return
		}
		out = append(out, fs)
	}
	writeJSON(w, map[string]any{"run": rn.ID, "steps": out})
}

// apiSweep summarises a sweep root: each run's last value of every metric
// whose key the query names (default: success and reward keys), plus the
// sweep's own summary files (*.json, *.csv, *.md, *.txt at its top level)
// as text.
func (s *Server) apiSweep(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("sweep")
	idx := -1
	for i := range s.runs.roots {
		if "r"+strconv.Itoa(i) == id {
			idx = i
		}
	}
	if idx < 0 {
		writeErr(w, notFound("no sweep %q", id))
		return
	}
	rt := s.runs.roots[idx]
	type row struct {
		Run   string             `json:"run"`
		Name  string             `json:"name"`
		Steps int                `json:"steps"`
		Last  map[string]jsonNum `json:"last"`
	}
	rows := []row{}
	keys := map[string]bool{}
	for _, rn := range s.runs.list() {
		if rn.Sweep != id {
			continue
		}
		recs, _ := readMetrics(rn)
		rw := row{Run: rn.ID, Name: strings.TrimPrefix(rn.Name, rt.name+"/"), Last: map[string]jsonNum{}}
		if len(recs) > 0 {
			rw.Steps = recs[len(recs)-1].Step
		}
		for _, rec := range recs {
			for k, v := range rec.Data {
				if strings.HasSuffix(k, "/success") || strings.HasPrefix(k, "val-core/") || k == "critic/score/mean" {
					rw.Last[k] = jsonNum(v)
					keys[k] = true
				}
			}
		}
		rows = append(rows, rw)
	}
	keyList := make([]string, 0, len(keys))
	for k := range keys {
		keyList = append(keyList, k)
	}
	sort.Strings(keyList)
	files := map[string]string{}
	if ents, err := os.ReadDir(rt.path); err == nil {
		for _, e := range ents {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || !evalName.MatchString(strings.TrimSuffix(e.Name(), ext)+".jsonl") {
				continue
			}
			switch ext {
			case ".json", ".csv", ".md", ".txt", ".yaml", ".jsonl":
				if info, err := e.Info(); err == nil && info.Size() < 1<<20 {
					if b, err := readWithin(rt.path, filepath.Join(rt.path, e.Name())); err == nil {
						files[e.Name()] = string(b)
					}
				}
			}
		}
	}
	writeJSON(w, map[string]any{"sweep": id, "name": rt.name, "keys": keyList, "runs": rows, "files": files})
}
