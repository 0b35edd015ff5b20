package track

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Logger receives the metrics of one training step.
type Logger interface {
	// Log records metrics for step. The map is not retained.
	Log(step int, metrics map[string]float64) error
	// Close flushes and releases the backend; further Logs are errors.
	Close() error
}

// ErrClosed is returned by Log on a closed logger.
var ErrClosed = errors.New("track: logger is closed")

// Backend names accepted by New (upstream's trainer.logger values plus ours).
const (
	BackendConsole     = "console"
	BackendFile        = "file" // veRL's FileLogger name
	BackendJSONL       = "jsonl"
	BackendTensorBoard = "tensorboard"
)

// ValidBackends lists the names New accepts.
var ValidBackends = []string{BackendConsole, BackendFile, BackendJSONL, BackendTensorBoard}

// remote are the backends of RAGEN's veRL that need an account and a
// network; unavailable adds newer veRL's trackio. New refuses them all.
var (
	remote      = []string{"wandb", "swanlab", "mlflow", "vemlp_wandb", "clearml"}
	unavailable = append(slices.Clone(remote), "trackio")
)

// LoggerNames lists upstream's trainer.logger names (RAGEN's veRL), sorted:
// the backends New runs and the remote ones it refuses offline. Config
// checks trainer.logger against it.
func LoggerNames() []string {
	out := append(slices.Clone(ValidBackends), remote...)
	slices.Sort(out)
	return out
}

// Headline names a value shown on the console progress bar. Key may be a
// path.Match pattern ("train/*/success"); when several metrics match, the bar
// shows their mean.
type Headline struct {
	Label string
	Key   string
}

// DefaultHeadlines are the bar's values: mean reward (veRL's
// critic/score/mean), mean success over the training env tags, and the
// policy entropy.
var DefaultHeadlines = []Headline{
	{"reward", "critic/score/mean"},
	{"success", "train/*/success"},
	{"entropy", "actor/entropy"},
}

// Options configures New. The zero value writes nothing to disk unless a
// file backend is chosen, in which case files go under the current directory
// with veRL's layout.
type Options struct {
	Project    string // trainer.project_name
	Experiment string // trainer.experiment_name

	// Dir is the root for file backends, "." by default.
	Dir string
	// JSONLPath is the JSONL file. Default: $VERL_FILE_LOGGER_PATH, else
	// <$VERL_FILE_LOGGER_ROOT or Dir>/<Project>/<Experiment>.jsonl as veRL's
	// FileLogger.
	JSONLPath string
	// TensorBoardDir holds the event files. Default: $TENSORBOARD_DIR, else
	// <Dir>/tensorboard_log/<Project>/<Experiment> as veRL.
	TensorBoardDir string

	// ResumeStep is the last completed step of the run being resumed (0 for
	// a fresh run). The JSONL file keeps records up to it and is appended
	// to; TensorBoard purges later steps of the killed run.
	ResumeStep int

	// Console backend.
	Out         io.Writer  // os.Stdout by default
	Mode        Mode       // progress bar drawing; auto-detects a terminal
	TotalSteps  int        // trainer.total_training_steps; 0 = unknown
	Title       string     // "Training Progress" by default (veRL's tqdm desc)
	Headlines   []Headline // DefaultHeadlines when nil
	NoTable     bool       // do not print the "step:N - key:value" line
	NoBar       bool       // do not draw the progress bar
	MinInterval time.Duration

	Now  func() time.Time // clock for the bar and wall times; time.Now by default
	Host string           // host name in event file names; os.Hostname by default
}

func (o *Options) dir() string {
	if o.Dir == "" {
		return "."
	}
	return o.Dir
}

func (o *Options) jsonlPath() string {
	if o.JSONLPath != "" {
		return o.JSONLPath
	}
	if p := os.Getenv("VERL_FILE_LOGGER_PATH"); p != "" {
		return p
	}
	root := o.dir()
	if r := os.Getenv("VERL_FILE_LOGGER_ROOT"); r != "" {
		root = r
	}
	return filepath.Join(root, o.Project, o.Experiment+".jsonl")
}

func (o *Options) tensorBoardDir() string {
	if o.TensorBoardDir != "" {
		return o.TensorBoardDir
	}
	if d := os.Getenv("TENSORBOARD_DIR"); d != "" {
		return d
	}
	return filepath.Join(o.dir(), "tensorboard_log", o.Project, o.Experiment)
}

// New builds one Logger over the named backends (upstream's trainer.logger
// list). Duplicates are ignored; "file" and "jsonl" are the same backend.
// Upstream's remote backends and unknown names are errors that list the
// valid names. On error nothing is left open.
func New(backends []string, opts Options) (Logger, error) {
	seen := map[string]bool{}
	var names []string
	var errs []error
	for _, b := range backends {
		name := strings.ToLower(strings.TrimSpace(b))
		if name == BackendFile {
			name = BackendJSONL
		}
		switch {
		case slices.Contains(unavailable, name):
			errs = append(errs, fmt.Errorf("track: logger backend %q is not available offline (it needs an account and network access); valid backends: %s",
				b, strings.Join(ValidBackends, ", ")))
			continue
		case !slices.Contains(ValidBackends, name):
			errs = append(errs, fmt.Errorf("track: unknown logger backend %q; valid backends: %s", b, strings.Join(ValidBackends, ", ")))
			continue
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var loggers []Logger
	for _, name := range names {
		var l Logger
		var err error
		switch name {
		case BackendConsole:
			l = NewConsole(opts)
		case BackendJSONL:
			l, err = OpenJSONL(opts.jsonlPath(), opts.ResumeStep)
		case BackendTensorBoard:
			l, err = OpenTensorBoard(opts.tensorBoardDir(), TensorBoardOptions{ResumeStep: opts.ResumeStep, Now: opts.Now, Host: opts.Host})
		}
		if err != nil {
			for _, o := range loggers {
				_ = o.Close()
			}
			return nil, err
		}
		loggers = append(loggers, l)
	}
	return Multi(loggers...), nil
}

type multi struct {
	ls     []Logger
	closed bool
}

// Multi fans every Log and Close out to all loggers, in order. A failing
// backend does not stop the others; the errors are joined.
func Multi(loggers ...Logger) Logger {
	ls := make([]Logger, 0, len(loggers))
	for _, l := range loggers {
		if l != nil {
			ls = append(ls, l)
		}
	}
	return &multi{ls: ls}
}

func (m *multi) Log(step int, metrics map[string]float64) error {
	if m.closed {
		return ErrClosed
	}
	if step < 0 {
		return fmt.Errorf("track: negative step %d", step)
	}
	var errs []error
	for _, l := range m.ls {
		if err := l.Log(step, metrics); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Resumer is implemented by loggers whose earlier records depend on the
// step a run resumed from (the JSONL file, TensorBoard events).
type Resumer interface {
	Resumed(step int) error
}

// Resumed passes the step a trainer resumed from to every backend that
// keeps records across runs.
func (m *multi) Resumed(step int) error {
	if m.closed {
		return ErrClosed
	}
	var errs []error
	for _, l := range m.ls {
		if r, ok := l.(Resumer); ok {
			if err := r.Resumed(step); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (m *multi) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	var errs []error
	for _, l := range m.ls {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Console is the "console" backend: veRL's per-step line
// "step:N - key:value - ..." followed by a progress bar.
type Console struct {
	bar       *Progress
	w         io.Writer
	headlines []Headline
	table     bool
	closed    bool
}

// NewConsole builds the console backend from opts (Out, Mode, TotalSteps,
// ResumeStep, Title, Headlines, NoTable, NoBar, MinInterval, Now).
func NewConsole(opts Options) *Console {
	w := opts.Out
	if w == nil {
		w = os.Stdout
	}
	c := &Console{w: w, table: !opts.NoTable, headlines: opts.Headlines}
	if c.headlines == nil {
		c.headlines = DefaultHeadlines
	}
	if !opts.NoBar {
		title := opts.Title
		if title == "" {
			title = "Training Progress"
		}
		c.bar = NewProgress(w, title, ProgressOptions{
			Total: opts.TotalSteps, Initial: opts.ResumeStep, Unit: "step",
			Mode: opts.Mode, MinInterval: opts.MinInterval, Now: opts.Now,
		})
	}
	return c
}

// Log prints the metrics line and moves the bar to step.
func (c *Console) Log(step int, metrics map[string]float64) error {
	if c.closed {
		return ErrClosed
	}
	if c.bar == nil {
		if c.table {
			if _, err := io.WriteString(c.w, FormatStep(step, metrics)+"\n"); err != nil {
				return fmt.Errorf("track: console: %w", err)
			}
		}
		return nil
	}
	if c.table {
		c.bar.Println(FormatStep(step, metrics))
	}
	c.bar.Set(step, HeadlineFields(c.headlines, metrics)...)
	return c.bar.Err()
}

// Close ends the progress bar's line.
func (c *Console) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.bar != nil {
		return c.bar.Finish()
	}
	return nil
}

// HeadlineFields picks the headline values present in metrics: for each
// headline, the mean of the metrics whose key matches its pattern. Headlines
// that match nothing are left out.
func HeadlineFields(hs []Headline, metrics map[string]float64) []Field {
	var out []Field
	for _, h := range hs {
		if v, ok := metrics[h.Key]; ok {
			out = append(out, Field{h.Label, v})
			continue
		}
		var keys []string
		for k := range metrics {
			if ok, _ := path.Match(h.Key, k); ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys) // a fixed summation order
		sum, n := 0.0, len(keys)
		for _, k := range keys {
			sum += metrics[k]
		}
		if n > 0 {
			out = append(out, Field{h.Label, sum / float64(n)})
		}
	}
	return out
}
