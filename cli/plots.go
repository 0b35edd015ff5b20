package cli

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"ragen/filter"
	"ragen/track"
)

// `ragen plot KIND` and `ragen visualize`: upstream's analysis scripts
// (the gradient-analysis figures, scripts/eval_reward_dist.py, the reward
// matrix, scripts/visualize.py) over ragen's own files: metrics.jsonl,
// trajectory JSONL (ragen eval --out) and validation dumps
// (trainer.validation_data_dir).

const plotUsage = `usage:
  ragen plot grad-analysis METRICS.jsonl [--out DIR]   per-bucket gradient norms (trainer.gradient_analysis_mode)
  ragen plot reward-dist FILE.jsonl... [--out DIR]      episode reward distribution (eval_reward_dist.py)
  ragen plot reward-matrix FILE.jsonl [--out DIR]       reward per group x sample (heatmap and CSV)
FILE.jsonl: trajectories from ragen eval --out, or validation dumps (trainer.validation_data_dir)`

func cmdPlot(args []string) error {
	if len(args) == 0 {
		return errors.New(plotUsage)
	}
	kind := args[0]
	fl, rest, err := splitFlags(args[1:], "out")
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return fmt.Errorf("ragen plot %s: no input file\n%s", kind, plotUsage)
	}
	out := fl["out"]
	var files []string
	switch kind {
	case "grad-analysis":
		if len(rest) != 1 {
			return fmt.Errorf("ragen plot grad-analysis takes one metrics file")
		}
		if out == "" {
			out = filepath.Join(filepath.Dir(rest[0]), "gradient_analysis")
		}
		files, err = plotGradAnalysis(rest[0], out)
	case "reward-dist":
		if out == "" {
			out = filepath.Join(filepath.Dir(rest[0]), "reward_dist")
		}
		files, err = plotRewardDist(rest, out, os.Stdout)
	case "reward-matrix":
		if len(rest) != 1 {
			return fmt.Errorf("ragen plot reward-matrix takes one file")
		}
		if out == "" {
			out = filepath.Join(filepath.Dir(rest[0]), "reward_matrix")
		}
		files, err = plotRewardMatrix(rest[0], out)
	default:
		return fmt.Errorf("ragen plot: unknown kind %q (valid: grad-analysis, reward-dist, reward-matrix)", kind)
	}
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Println(f)
	}
	return nil
}

var bucketKey = regexp.MustCompile(`^` + filter.PrefixGradNorm + `(_prefilter)?/(all|bucket_\d+)/(per_token/|per_sample/)?(task|entropy|kl)$`)

// plotGradAnalysis draws upstream's gradient-analysis figures from a
// metrics file: for the last analysis step, the task/entropy/KL gradient
// norms per reward-variance bucket (raw, per sample, per token; x = bucket
// 1..N, lowest reward std first), and each component's per-bucket norm over
// the training steps.
func plotGradAnalysis(path, out string) ([]string, error) {
	recs, err := track.ReadJSONL(path)
	if err != nil {
		return nil, err
	}
	var last *track.Record
	for i := range recs {
		for k := range recs[i].Data {
			if bucketKey.MatchString(k) {
				last = &recs[i]
				break
			}
		}
	}
	if last == nil {
		return nil, fmt.Errorf("%s: no gradient-analysis metrics (%s/<bucket>/task ...): run with trainer.gradient_analysis_mode=True", path, filter.PrefixGradNorm)
	}
	var files []string
	for _, prefix := range []string{filter.PrefixGradNorm, filter.PrefixGradNormPrefilter} {
		for _, norm := range []string{"", "per_sample/", "per_token/"} {
			// one record per bucket, Step = bucket number
			var byBucket []track.Record
			for b := 1; ; b++ {
				d := map[string]float64{}
				for _, c := range []string{"task", "entropy", "kl"} {
					if v, ok := last.Data[fmt.Sprintf("%s/bucket_%d/%s%s", prefix, b, norm, c)]; ok {
						d[c] = v
					}
				}
				if len(d) == 0 {
					break
				}
				byBucket = append(byBucket, track.Record{Step: b, Data: d})
			}
			if len(byBucket) == 0 {
				continue
			}
			name := strings.TrimSuffix(strings.ReplaceAll(prefix+"_"+norm, "/", ""), "_")
			title := fmt.Sprintf("%s %sby RV bucket, step %d (x: bucket, low to high reward std)", prefix, strings.ReplaceAll(norm, "/", " "), last.Step)
			fs, err := track.PlotCharts(byBucket, []track.Chart{{Name: name + "_by_bucket", Title: title, Keys: []string{"task", "entropy", "kl"}}},
				out, track.PlotOptions{NoSmoothing: true, NoSummary: true})
			if err != nil && !errors.Is(err, track.ErrNoData) {
				return files, err
			}
			files = append(files, fs...)
		}
	}
	var charts []track.Chart
	for _, c := range []string{"task", "entropy", "kl"} {
		charts = append(charts, track.Chart{Name: "grad_norm_" + c + "_over_steps", Title: c + " gradient norm per bucket over steps",
			Keys: []string{filter.PrefixGradNorm + "/*/" + c}})
	}
	charts = append(charts, track.Chart{Name: "reward_std_per_bucket", Title: "mean reward std per bucket", Keys: []string{filter.PrefixGradNorm + "/*/reward_std_mean"}})
	fs, err := track.PlotCharts(recs, charts, out, track.PlotOptions{NoSmoothing: true})
	if err != nil && !errors.Is(err, track.ErrNoData) {
		return files, err
	}
	return append(files, fs...), nil
}

// episode is one trajectory of a JSONL file, either format.
type episode struct {
	Tag     string
	GroupID int
	EnvID   int
	Reward  float64
	Success bool
	Step    int
	Turns   []turn
}

type turn struct{ Role, Content string }

// readEpisodes reads trajectory JSONL (ragen eval --out: custom_id,
// messages, metadata) or validation dumps (input, output, score).
func readEpisodes(path string) ([]episode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var out []episode
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var raw struct {
			Messages []struct{ Role, Content string } `json:"messages"`
			Metadata *struct {
				EnvID       int      `json:"env_id"`
				GroupID     int      `json:"group_id"`
				TotalReward *float64 `json:"total_reward"`
				Success     bool     `json:"success"`
			} `json:"metadata"`
			Input   *string  `json:"input"`
			Output  string   `json:"output"`
			Score   *float64 `json:"score"`
			Step    int      `json:"step"`
			Tag     string   `json:"tag"`
			EnvID   int      `json:"env_id"`
			GroupID int      `json:"group_id"`
			Success bool     `json:"success"`
		}
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		var e episode
		switch {
		case raw.Metadata != nil && raw.Metadata.TotalReward != nil:
			md := raw.Metadata
			e = episode{GroupID: md.GroupID, EnvID: md.EnvID, Reward: *md.TotalReward, Success: md.Success}
			var all map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &all); err == nil {
				var m map[string]json.RawMessage
				if json.Unmarshal(all["metadata"], &m) == nil {
					for k := range m {
						if tag, _, ok := strings.Cut(k, "/"); ok {
							e.Tag = tag
							break
						}
					}
				}
			}
			for _, m := range raw.Messages {
				e.Turns = append(e.Turns, turn{m.Role, m.Content})
			}
		case raw.Input != nil && raw.Score != nil:
			e = episode{Tag: raw.Tag, GroupID: raw.GroupID, EnvID: raw.EnvID, Reward: *raw.Score, Success: raw.Success, Step: raw.Step,
				Turns: []turn{{"user", *raw.Input}, {"assistant", raw.Output}}}
		default:
			return nil, fmt.Errorf("%s:%d: neither a trajectory record (metadata.total_reward) nor a validation dump (input, score)", path, n)
		}
		if math.IsNaN(e.Reward) || math.IsInf(e.Reward, 0) {
			return nil, fmt.Errorf("%s:%d: reward %v", path, n, e.Reward)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no episodes", path)
	}
	return out, nil
}

// plotRewardDist prints the reward distribution of each file (count,
// mean, std, quantiles, success rate, each distinct reward with its count,
// as eval_reward_dist.py prints them) and draws the quantile curves of all
// files in one chart (x: percentile 0..100, y: reward).
func plotRewardDist(paths []string, out string, w io.Writer) ([]string, error) {
	byStep := map[int]map[string]float64{}
	var keys []string
	for i, p := range paths {
		eps, err := readEpisodes(p)
		if err != nil {
			return nil, err
		}
		rs := make([]float64, len(eps))
		succ := 0
		counts := map[float64]int{}
		for j, e := range eps {
			rs[j] = e.Reward
			counts[e.Reward]++
			if e.Success {
				succ++
			}
		}
		sort.Float64s(rs)
		mean, sd := meanStd(rs)
		q := func(f float64) float64 { return quantile(rs, f) }
		fmt.Fprintf(w, "%s: %d episodes, success %.3f, reward mean %.4g std %.4g min %.4g p25 %.4g median %.4g p75 %.4g max %.4g\n",
			p, len(rs), float64(succ)/float64(len(rs)), mean, sd, rs[0], q(0.25), q(0.5), q(0.75), rs[len(rs)-1])
		distinct := make([]float64, 0, len(counts))
		for v := range counts {
			distinct = append(distinct, v)
		}
		sort.Float64s(distinct)
		if len(distinct) <= 20 {
			for _, v := range distinct {
				fmt.Fprintf(w, "  reward %-10s %5d  (%.1f%%)\n", track.PyFloat(v), counts[v], 100*float64(counts[v])/float64(len(rs)))
			}
		}
		label := strings.NewReplacer("/", "_", "*", "_", "?", "_", "[", "(", "]", ")").Replace(fmt.Sprintf("%d:%s", i, filepath.Base(p)))
		keys = append(keys, label)
		for pct := 0; pct <= 100; pct++ {
			m := byStep[pct]
			if m == nil {
				m = map[string]float64{}
				byStep[pct] = m
			}
			m[label] = q(float64(pct) / 100)
		}
	}
	var recs []track.Record
	for s, m := range byStep {
		recs = append(recs, track.Record{Step: s, Data: m})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Step < recs[j].Step })
	return track.PlotCharts(recs, []track.Chart{{Name: "reward_quantiles", Title: "episode reward by percentile (x: percentile)", Keys: keys}},
		out, track.PlotOptions{NoSmoothing: true, NoSummary: true})
}

func meanStd(v []float64) (float64, float64) {
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)))
}

// quantile is numpy's linear-interpolation quantile of sorted v.
func quantile(v []float64, q float64) float64 {
	pos := q * float64(len(v)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (pos-float64(i))*(v[i+1]-v[i])
}

// plotRewardMatrix writes the reward of every episode as a matrix, one row
// per env group, one column per episode of the group (in file order):
// reward_matrix.csv and reward_matrix.png (a heatmap, blue = lowest reward,
// red = highest; each row also gets the group's reward std in the CSV).
func plotRewardMatrix(path, out string) ([]string, error) {
	eps, err := readEpisodes(path)
	if err != nil {
		return nil, err
	}
	type key struct {
		step, group int
	}
	rows := map[key][]float64{}
	var order []key
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range eps {
		k := key{e.Step, e.GroupID}
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		rows[k] = append(rows[k], e.Reward)
		lo, hi = math.Min(lo, e.Reward), math.Max(hi, e.Reward)
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	csvPath := filepath.Join(out, "reward_matrix.csv")
	f, err := os.Create(csvPath)
	if err != nil {
		return nil, err
	}
	cw := csv.NewWriter(f)
	head := []string{"step", "group_id", "reward_std"}
	for i := 0; i < width; i++ {
		head = append(head, "sample_"+strconv.Itoa(i))
	}
	_ = cw.Write(head)
	for _, k := range order {
		r := rows[k]
		_, sd := meanStd(r)
		row := []string{strconv.Itoa(k.step), strconv.Itoa(k.group), track.PyFloat(sd)}
		for _, v := range r {
			row = append(row, track.PyFloat(v))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	if err := errors.Join(cw.Error(), f.Close()); err != nil {
		return nil, err
	}
	// heatmap: cells of at least 4 px, at most 1600 px a side
	cell := max(4, min(40, 1600/max(width, len(order))))
	img := image.NewRGBA(image.Rect(0, 0, width*cell+1, len(order)*cell+1))
	for y := range img.Bounds().Dy() {
		for x := range img.Bounds().Dx() {
			img.Set(x, y, color.RGBA{235, 235, 235, 255})
		}
	}
	for i, k := range order {
		for j, v := range rows[k] {
			t := 0.5
			if hi > lo {
				t = (v - lo) / (hi - lo)
			}
			c := color.RGBA{uint8(40 + 200*t), uint8(60 + 60*(1-math.Abs(2*t-1))), uint8(240 - 200*t), 255}
			for y := i*cell + 1; y < (i+1)*cell; y++ {
				for x := j*cell + 1; x < (j+1)*cell; x++ {
					img.Set(x, y, c)
				}
			}
		}
	}
	pngPath := filepath.Join(out, "reward_matrix.png")
	pf, err := os.Create(pngPath)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(png.Encode(pf, img), pf.Close()); err != nil {
		return nil, err
	}
	return []string{csvPath, pngPath}, nil
}

// cmdVisualize serves a trajectory file as web pages (upstream's
// scripts/visualize.py): an index of episodes with reward and success, and
// one page per episode with its turns.
func cmdVisualize(ctx context.Context, args []string) error {
	fl, rest, err := splitFlags(args, "addr")
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("usage: ragen visualize FILE.jsonl [--addr 127.0.0.1:8000]")
	}
	h, err := visualizeHandler(rest[0])
	if err != nil {
		return err
	}
	addr := fl["addr"]
	if addr == "" {
		addr = "127.0.0.1:8000"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("serving %s on http://%s/ (Ctrl-C stops)\n", rest[0], ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

var visIndex = template.Must(template.New("index").Parse(`<!doctype html><meta charset="utf-8"><title>{{.File}}</title>
<style>body{font-family:sans-serif}td,th{padding:2px 8px}tr:nth-child(even){background:#f4f4f4}</style>
<h1>{{.File}}</h1><p>{{len .Eps}} episodes, success {{printf "%.3f" .Success}}, mean reward {{printf "%.4g" .Mean}}</p>
<table><tr><th>#</th><th>step</th><th>tag</th><th>group</th><th>env</th><th>reward</th><th>success</th></tr>
{{range $i, $e := .Eps}}<tr><td><a href="/ep/{{$i}}">{{$i}}</a></td><td>{{$e.Step}}</td><td>{{$e.Tag}}</td><td>{{$e.GroupID}}</td><td>{{$e.EnvID}}</td><td>{{$e.Reward}}</td><td>{{$e.Success}}</td></tr>
{{end}}</table>`))

var visEpisode = template.Must(template.New("ep").Parse(`<!doctype html><meta charset="utf-8"><title>episode {{.I}}</title>
<style>body{font-family:sans-serif}pre{white-space:pre-wrap;padding:6px}.user{background:#eef}.assistant{background:#efe}.system{background:#eee}</style>
<p><a href="/">index</a>{{if .Prev}} · <a href="/ep/{{.PrevI}}">previous</a>{{end}}{{if .Next}} · <a href="/ep/{{.NextI}}">next</a>{{end}}</p>
<h1>episode {{.I}}: {{.E.Tag}} group {{.E.GroupID}} env {{.E.EnvID}}, reward {{.E.Reward}}, success {{.E.Success}}</h1>
{{range .E.Turns}}<h3>{{.Role}}</h3><pre class="{{.Role}}">{{.Content}}</pre>{{end}}`))

// visualizeHandler reads the file once and serves its pages.
func visualizeHandler(path string) (http.Handler, error) {
	eps, err := readEpisodes(path)
	if err != nil {
		return nil, err
	}
	succ, sum := 0.0, 0.0
	for _, e := range eps {
		if e.Success {
			succ++
		}
		sum += e.Reward
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = visIndex.Execute(w, map[string]any{"File": path, "Eps": eps, "Success": succ / float64(len(eps)), "Mean": sum / float64(len(eps))})
	})
	mux.HandleFunc("GET /ep/{i}", func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.PathValue("i"))
		if err != nil || i < 0 || i >= len(eps) {
			http.Error(w, fmt.Sprintf("no episode %q (0..%d)", r.PathValue("i"), len(eps)-1), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = visEpisode.Execute(w, map[string]any{"I": i, "E": eps[i], "Prev": i > 0, "PrevI": i - 1, "Next": i+1 < len(eps), "NextI": i + 1})
	})
	return mux, nil
}
