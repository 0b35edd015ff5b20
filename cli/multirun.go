package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"ragen/track"
)

// Hydra multirun: `ragen train -m a=1,2 b=x,y` runs the Cartesian product
// of the swept values (a varies slowest, as Hydra's basic sweeper orders
// jobs), each job in <hydra.sweep.dir>/<job number>, sequentially or with
// --jobs N processes at once, then writes a sweep summary next to them.

// sweepJob is one run of a sweep.
type sweepJob struct {
	Num       int
	Overrides []string          // the job's full override list
	Params    map[string]string // swept key -> value of this job
	Dir       string
	Err       error
}

// sweepPlan is a parsed multirun command line.
type sweepPlan struct {
	Flags     []string // --config-name etc., passed to every job
	Keys      []string // swept keys, in command-line order
	Jobs      []sweepJob
	Dir       string // hydra.sweep.dir
	Notices   []string
	userLocal bool // trainer.default_local_dir was given (it is replaced per job)
}

// splitSweepValue splits an override value at its top-level commas
// (outside brackets, braces, parentheses and quotes), and expands Hydra's
// range(start, stop[, step]) and choice(a, b, ...) sweeps.
func splitSweepValue(v string) ([]string, error) {
	if inner, ok := strings.CutPrefix(v, "choice("); ok && strings.HasSuffix(inner, ")") {
		return splitSweepValue(strings.TrimSuffix(inner, ")"))
	}
	if inner, ok := strings.CutPrefix(v, "range("); ok && strings.HasSuffix(inner, ")") {
		parts, err := splitSweepValue(strings.TrimSuffix(inner, ")"))
		if err != nil {
			return nil, err
		}
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("range(%s): want range(start, stop[, step])", inner)
		}
		var nums [3]float64
		nums[2] = 1
		allInt := true
		for i, p := range parts {
			p = strings.TrimSpace(p)
			f, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, fmt.Errorf("range(%s): %q is not a number", strings.TrimSuffix(inner, ")"), p)
			}
			nums[i] = f
			if _, err := strconv.Atoi(p); err != nil {
				allInt = false
			}
		}
		if nums[2] == 0 || math.IsNaN(nums[2]) {
			return nil, fmt.Errorf("range: step must not be 0")
		}
		var out []string
		for x := nums[0]; (nums[2] > 0 && x < nums[1]) || (nums[2] < 0 && x > nums[1]); x += nums[2] {
			if allInt {
				out = append(out, strconv.Itoa(int(x)))
			} else {
				out = append(out, strconv.FormatFloat(x, 'g', -1, 64))
			}
			if len(out) > 10000 {
				return nil, fmt.Errorf("range: more than 10000 values")
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("range(%s) is empty", strings.TrimSuffix(inner, ")"))
		}
		return out, nil
	}
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '{' || c == '(':
			depth++
		case c == ']' || c == '}' || c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(v[start:i]))
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, fmt.Errorf("unbalanced quotes or brackets in %q", v)
	}
	out = append(out, strings.TrimSpace(v[start:]))
	for _, s := range out {
		if s == "" {
			return nil, fmt.Errorf("empty value in sweep %q", v)
		}
	}
	return out, nil
}

// planSweep expands a multirun command line (flags and overrides, -m
// already removed) into jobs. now names the default sweep folder.
func planSweep(args []string, now time.Time) (*sweepPlan, error) {
	p := &sweepPlan{Dir: filepath.Join("multirun", now.Format("2006-01-02"), now.Format("15-04-05"))}
	type axis struct {
		prefix, key string // prefix: "", "+" or "++"
		vals        []string
	}
	var axes []axis
	subdir := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			p.Flags = append(p.Flags, a)
			if !strings.Contains(a, "=") && (a == "--config-name" || a == "-cn" || a == "--config-path" || a == "-cp" || a == "--cfg" || a == "-c") && i+1 < len(args) {
				i++
				p.Flags = append(p.Flags, args[i])
			}
			continue
		}
		k, v, hasVal := strings.Cut(a, "=")
		prefix := ""
		for strings.HasPrefix(k, "+") && len(prefix) < 2 {
			prefix += "+"
			k = k[1:]
		}
		if !hasVal || strings.HasPrefix(k, "~") {
			axes = append(axes, axis{"", a, nil})
			continue
		}
		if strings.HasPrefix(k, "hydra.") {
			switch k {
			case "hydra.sweep.dir":
				p.Dir = v
			case "hydra.sweep.subdir":
				subdir = v
			default:
				p.Notices = append(p.Notices, fmt.Sprintf("%s has no effect: Hydra's own settings other than hydra.sweep.dir and hydra.sweep.subdir do not exist here", k))
			}
			continue
		}
		if k == "trainer.default_local_dir" {
			p.userLocal = true
			p.Notices = append(p.Notices, "trainer.default_local_dir is replaced per job by <hydra.sweep.dir>/<job number>: each run gets its own folder")
			continue
		}
		vals, err := splitSweepValue(v)
		if err != nil {
			return nil, fmt.Errorf("multirun: %s: %w", a, err)
		}
		if len(vals) > 1 {
			p.Keys = append(p.Keys, k)
		}
		axes = append(axes, axis{prefix, k, vals})
	}
	if subdir != "" && subdir != "${hydra.job.num}" {
		p.Notices = append(p.Notices, fmt.Sprintf("hydra.sweep.subdir=%s: job folders are numbered (${hydra.job.num}) here", subdir))
	}
	// Cartesian product, first axis slowest.
	combos := [][]string{nil}
	params := []map[string]string{{}}
	for _, ax := range axes {
		if ax.vals == nil {
			for i := range combos {
				combos[i] = append(combos[i], ax.key)
			}
			continue
		}
		var nc [][]string
		var np []map[string]string
		for i, c := range combos {
			for _, v := range ax.vals {
				nc = append(nc, append(append([]string{}, c...), ax.prefix+ax.key+"="+v))
				m := map[string]string{}
				for k, x := range params[i] {
					m[k] = x
				}
				if len(ax.vals) > 1 {
					m[ax.key] = v
				}
				np = append(np, m)
			}
		}
		combos, params = nc, np
		if len(combos) > 1000 {
			return nil, fmt.Errorf("multirun: more than 1000 jobs")
		}
	}
	for i, c := range combos {
		dir := filepath.Join(p.Dir, strconv.Itoa(i))
		p.Jobs = append(p.Jobs, sweepJob{Num: i, Params: params[i], Dir: dir,
			Overrides: append(c, "trainer.default_local_dir="+dir)})
	}
	return p, nil
}

// runSweep is `ragen train -m`: it runs every job, then summarises.
// jobs > 1 runs that many `ragen train` processes at once (this binary);
// jobs <= 1 runs them one after the other in this process.
func runSweep(ctx context.Context, args []string, deviceFlag string, jobs int) error {
	p, err := planSweep(args, time.Now())
	if err != nil {
		return err
	}
	for _, n := range p.Notices {
		fmt.Fprintln(os.Stderr, "ragen: multirun:", n)
	}
	if p.cfgOnly() {
		// --cfg job: print each job's config; no sweep folder, no summary
		for i := range p.Jobs {
			fmt.Printf("# multirun job %d: %s\n", p.Jobs[i].Num, strings.Join(p.Jobs[i].Overrides, " "))
			if err := trainOnce(ctx, append(append([]string{}, p.Flags...), p.Jobs[i].Overrides...), deviceFlag, true); err != nil {
				return fmt.Errorf("multirun: job %d: %w", p.Jobs[i].Num, err)
			}
		}
		return nil
	}
	// every job's config is composed and validated before any job starts
	for i := range p.Jobs {
		t, _, err := loadTree(append(append([]string{}, p.Flags...), p.Jobs[i].Overrides...), "base")
		if err == nil {
			_, _, _, _, err = libraryConfigs(t)
		}
		if err != nil {
			return fmt.Errorf("multirun: job %d (%s): %w", i, strings.Join(p.Jobs[i].Overrides, " "), err)
		}
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return err
	}
	fmt.Printf("multirun: %d job(s) in %s\n", len(p.Jobs), p.Dir)
	runOne := func(j *sweepJob) error {
		fmt.Printf("multirun: #%d %s\n", j.Num, strings.Join(j.Overrides, " "))
		jobArgs := append(append([]string{}, p.Flags...), j.Overrides...)
		if jobs <= 1 {
			return trainOnce(ctx, jobArgs, deviceFlag, true)
		}
		return sweepExec(ctx, j.Dir, jobArgs, deviceFlag)
	}
	if jobs <= 1 {
		for i := range p.Jobs {
			if err := ctx.Err(); err != nil {
				return err
			}
			p.Jobs[i].Err = runOne(&p.Jobs[i])
		}
	} else {
		sem := make(chan struct{}, jobs)
		var wg sync.WaitGroup
		for i := range p.Jobs {
			wg.Add(1)
			go func(j *sweepJob) {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					j.Err = ctx.Err()
					return
				}
				defer func() { <-sem }()
				j.Err = runOne(j)
			}(&p.Jobs[i])
		}
		wg.Wait()
	}
	files, err := writeSweepSummary(p)
	if err != nil {
		return err
	}
	fmt.Printf("multirun summary: %s\n", strings.Join(files, ", "))
	var errs []error
	for _, j := range p.Jobs {
		if j.Err != nil {
			errs = append(errs, fmt.Errorf("job %d (%s): %w", j.Num, j.Dir, j.Err))
		}
	}
	return errors.Join(errs...)
}

// sweepExec runs one job as a child `ragen train` process, its output in
// <dir>/train.log. It is a variable so that tests can run jobs without a
// ragen binary.
var sweepExec = func(ctx context.Context, dir string, args []string, deviceFlag string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "train.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	full := append([]string{"train"}, args...)
	if deviceFlag != "" {
		full = append(full, "--device", deviceFlag)
	}
	cmd := exec.CommandContext(ctx, exe, full...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	return nil
}

// sweepColumns are the summary's metrics: name, how a run's metrics.jsonl
// reduces to one number.
var sweepColumns = []struct {
	name, pattern, reduce string
}{
	{"val_success", "val-env/*/success", "last"},     // mean over env tags, last validation
	{"val_success_best", "val-env/*/success", "max"}, // best validation
	{"reward", "critic/score/mean", "last"},          // training reward at the last step
	{"filter_kept_ratio", "rollout/filter_kept_ratio", "mean"},
	{"mi_estimate", "collapse*/mi_estimate", "last"},
}

// patternMean is the mean of one step's metrics whose names match pattern
// (path.Match), NaN values left out; false when none has a value.
func patternMean(data map[string]float64, pattern string) (float64, bool) {
	sum, n := 0.0, 0
	for k, v := range data {
		if ok, _ := path.Match(pattern, k); ok && !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// reduceRun reduces a run's records to the summary columns (NaN: no data)
// and returns the per-step series of the plotted metrics.
func reduceRun(recs []track.Record) (vals map[string]float64, steps int) {
	vals = map[string]float64{}
	for _, c := range sweepColumns {
		var series []float64
		for _, r := range recs {
			if x, ok := patternMean(r.Data, c.pattern); ok {
				series = append(series, x)
			}
		}
		x := math.NaN()
		if len(series) > 0 {
			switch c.reduce {
			case "last":
				x = series[len(series)-1]
			case "max":
				x = series[0]
				for _, s := range series {
					x = math.Max(x, s)
				}
			case "mean":
				x = 0
				for _, s := range series {
					x += s
				}
				x /= float64(len(series))
			}
		}
		vals[c.name] = x
	}
	for _, r := range recs {
		steps = max(steps, r.Step)
	}
	return vals, steps
}

// writeSweepSummary writes summary.md, summary.csv and plots/ (one chart
// per metric, one line per run, and summary.png) into the sweep folder.
func writeSweepSummary(p *sweepPlan) ([]string, error) {
	header := []string{"job"}
	header = append(header, p.Keys...)
	header = append(header, "steps")
	for _, c := range sweepColumns {
		header = append(header, c.name)
	}
	header = append(header, "status", "dir")
	var rows [][]string
	merged := map[int]map[string]float64{}
	for _, j := range p.Jobs {
		row := []string{strconv.Itoa(j.Num)}
		for _, k := range p.Keys {
			row = append(row, j.Params[k])
		}
		recs, rerr := track.ReadJSONL(filepath.Join(j.Dir, "metrics.jsonl"))
		vals, steps := reduceRun(recs)
		row = append(row, strconv.Itoa(steps))
		for _, c := range sweepColumns {
			if x := vals[c.name]; math.IsNaN(x) {
				row = append(row, "")
			} else {
				row = append(row, strconv.FormatFloat(x, 'g', 4, 64))
			}
		}
		status := "ok"
		switch {
		case j.Err != nil:
			status = "failed: " + strings.ReplaceAll(j.Err.Error(), "\n", " ")
		case rerr != nil:
			status = "no metrics: " + rerr.Error()
		}
		row = append(row, status, j.Dir)
		rows = append(rows, row)
		label := runLabel(j, p.Keys)
		for _, r := range recs {
			m := merged[r.Step]
			if m == nil {
				m = map[string]float64{}
				merged[r.Step] = m
			}
			for _, c := range sweepColumns {
				if c.name == "val_success_best" {
					continue
				}
				if x, ok := patternMean(r.Data, c.pattern); ok {
					m[label+"/"+c.name] = x
				}
			}
		}
	}
	var files []string
	// CSV
	csvPath := filepath.Join(p.Dir, "summary.csv")
	f, err := os.Create(csvPath)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return nil, err
	}
	files = append(files, csvPath)
	// Markdown
	var b strings.Builder
	fmt.Fprintf(&b, "# Sweep %s\n\n%d run(s); val_success is the mean over validation env tags at the last validation, val_success_best its best; reward is critic/score/mean at the last step; filter_kept_ratio is averaged over steps; mi_estimate is the collapse detector's last mutual-information estimate. Empty cells: not logged.\n\n", p.Dir, len(p.Jobs))
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		esc := make([]string, len(r))
		for i, c := range r {
			esc[i] = strings.ReplaceAll(c, "|", "\\|")
		}
		b.WriteString("| " + strings.Join(esc, " | ") + " |\n")
	}
	mdPath := filepath.Join(p.Dir, "summary.md")
	if err := os.WriteFile(mdPath, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	files = append(files, mdPath)
	// plot: one chart per metric, one line per run
	var recs []track.Record
	for s, m := range merged {
		recs = append(recs, track.Record{Step: s, Data: m})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Step < recs[j].Step })
	var charts []track.Chart
	for _, c := range sweepColumns {
		if c.name == "val_success_best" {
			continue
		}
		charts = append(charts, track.Chart{Name: c.name, Title: strings.ReplaceAll(c.name, "_", " ") + " per run", Keys: []string{"*/" + c.name}})
	}
	pngs, err := track.PlotCharts(recs, charts, filepath.Join(p.Dir, "plots"), track.PlotOptions{NoSmoothing: true})
	switch {
	case errors.Is(err, track.ErrNoData):
		fmt.Fprintln(os.Stderr, "ragen: multirun: no metrics to plot")
	case err != nil:
		return files, err
	default:
		for _, png := range pngs {
			if filepath.Base(png) == "summary.png" {
				files = append(files, png)
			}
		}
	}
	return files, nil
}

// runLabel names a run in the plots: its swept values (short key names),
// or its number when nothing was swept. Slashes would split metric keys.
func runLabel(j sweepJob, keys []string) string {
	var parts []string
	for _, k := range keys {
		short := k[strings.LastIndex(k, ".")+1:]
		parts = append(parts, short+"="+j.Params[k])
	}
	if len(parts) == 0 {
		return "#" + strconv.Itoa(j.Num)
	}
	return strings.NewReplacer("/", "_", "*", "_", "?", "_", "[", "(", "]", ")").Replace(strings.Join(parts, ","))
}

// isMultirunFlag reports -m / --multirun.
func isMultirunFlag(a string) bool { return a == "-m" || a == "--multirun" }

// cfgOnly: the sweep's flags ask for --cfg job (print the configs only).
func (p *sweepPlan) cfgOnly() bool {
	for i, f := range p.Flags {
		if (f == "--cfg" || f == "-c") && i+1 < len(p.Flags) || strings.HasPrefix(f, "--cfg=") || strings.HasPrefix(f, "-c=") {
			return true
		}
	}
	return false
}
