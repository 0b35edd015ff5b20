package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"ragen/config"
	"ragen/dash"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

const dashUsage = `usage: ragen dash [--addr 127.0.0.1:8090] [--token T] [--model DIR[,DIR...]]
                  [--base-url URL --api-model NAME [--api-key-env VAR]]
                  [--config-name demo] [--device cpu] RUN_DIR... [key=value ...]

Serves the runs (metrics charts, trajectories, RAGEN-2 filter and collapse
view) and a live play page. RUN_DIR is a training output folder
(trainer.default_local_dir, e.g. runs/demo) or a folder of such folders;
an argument that names an existing folder is a RUN_DIR even with a "=" in
it, any other key=value a config override.
The play page offers the env tags of --config-name (default demo), the
oracle, each RUN_DIR's exported model (RUN_DIR/final), --model folders and
the --base-url endpoint. Binding anywhere but loopback needs --token (or
RAGEN_DASH_TOKEN).`

// dashFlags is ragen dash --help's flag list.
const dashFlags = `RUN_DIR is a training output folder (trainer.default_local_dir, e.g. runs/demo)
or a folder of such folders (a sweep); an argument naming an existing folder is a
RUN_DIR even with a "=" in it, any other key=value a config override for play.

  --addr HOST:PORT       listen address (default 127.0.0.1:8090); anywhere but
                         loopback needs --token
  --token T              bearer token for every request (default $RAGEN_DASH_TOKEN)
  --model DIR[,DIR...]   model folders the play page offers, besides each
                         RUN_DIR/final and the oracle
  --base-url URL         an OpenAI-compatible endpoint the play page offers
  --api-model NAME       the model name it serves (required with --base-url)
  --api-key-env VAR      environment variable holding its key
  --config-name NAME     the config whose env tags play offers (default demo)
  --config-path DIR      a folder of your own configs
  --device D             cpu, cuda or cuda:N for play's models (default system.device, else cpu)
`

// dashArgs are the parsed flags of ragen dash.
type dashArgs struct {
	addr, token, device     string
	models                  []string
	baseURL, apiModel, keyE string
	runs, cfgArgs           []string
	explicitCfg             bool // --config-name or overrides given
}

func parseDashArgs(args []string) (dashArgs, error) {
	fl, rest, err := splitFlags(args, "addr", "token", "model", "base-url", "api-model", "api-key-env", "device", "config-name", "config-path")
	if err != nil {
		return dashArgs{}, err
	}
	d := dashArgs{addr: fl["addr"], token: fl["token"], device: fl["device"], baseURL: fl["base-url"], apiModel: fl["api-model"], keyE: fl["api-key-env"]}
	if d.addr == "" {
		d.addr = "127.0.0.1:8090"
	}
	if d.token == "" {
		d.token = os.Getenv("RAGEN_DASH_TOKEN")
	}
	if fl["model"] != "" {
		d.models = strings.Split(fl["model"], ",")
	}
	name := fl["config-name"]
	d.explicitCfg = name != ""
	if name == "" {
		name = "demo"
	}
	d.cfgArgs = []string{"--config-name", name}
	if fl["config-path"] != "" {
		d.cfgArgs = append(d.cfgArgs, "--config-path", fl["config-path"])
	}
	for _, a := range rest {
		if strings.HasPrefix(a, "-") {
			return d, fmt.Errorf("unknown flag %s\n%s", a, dashUsage)
		}
		// an argument that names an existing folder is a run folder, even
		// with a "=" in its path (a sweep's runs/lr=1e-5)
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			d.runs = append(d.runs, a)
			continue
		}
		if strings.Contains(a, "=") || strings.HasPrefix(a, "~") {
			d.cfgArgs = append(d.cfgArgs, a) // a config override for play
			d.explicitCfg = true
		} else {
			d.runs = append(d.runs, a)
		}
	}
	if len(d.runs) == 0 {
		return d, errors.New(dashUsage)
	}
	if d.baseURL != "" && d.apiModel == "" {
		return d, errors.New("--base-url needs --api-model (the model name the server serves)")
	}
	return d, dash.CheckBind(d.addr, d.token)
}

// dashOptions builds the dashboard's options: play configs from the config
// tree, model folders, the API endpoint.
func dashOptions(d dashArgs) (dash.Options, error) {
	opt := dash.Options{Runs: d.runs, Token: d.token}
	t, _, err := loadTree(d.cfgArgs, "demo")
	if err != nil {
		return opt, err
	}
	v, err := t.Get("custom_envs")
	if err != nil {
		return opt, err
	}
	envs, ok := v.(*config.Map)
	if !ok || envs.Len() == 0 {
		return opt, errors.New("dash: the config has no custom_envs to play")
	}
	tags := envs.Keys()
	sort.Strings(tags)
	// the run folders' own envs first (the demo's DemoBandit)
	sort.SliceStable(tags, func(i, j int) bool { return strings.HasPrefix(tags[i], "Demo") && !strings.HasPrefix(tags[j], "Demo") })
	play := &dash.PlayOptions{Tags: tags, Provider: ragen.DefaultProvider()}
	// Tags of base.yaml play with base's agent settings (the demo's are one
	// turn of one action) unless --config-name was given.
	base, _, err := loadTree(nil, "base")
	if err != nil {
		return opt, err
	}
	play.Config = func(tag string) (ragen.Config, error) {
		args := d.cfgArgs
		if !d.explicitCfg && base.Has("custom_envs."+tag) {
			args = []string{"--config-name", "base"}
		}
		t, _, err := loadTree(append(append([]string(nil), args...),
			"es_manager.val.env_groups=1", "es_manager.val.group_size=1",
			"es_manager.val.env_configs.tags=["+tag+"]", "es_manager.val.env_configs.n_groups=[1]"), "demo")
		if err != nil {
			return ragen.Config{}, err
		}
		return rolloutConfig(t)
	}
	for _, r := range d.runs {
		if _, err := os.Stat(filepath.Join(r, "final", "config.json")); err == nil {
			play.Models = append(play.Models, filepath.Join(r, "final"))
		}
	}
	for _, m := range d.models {
		if err := localModelDir(m); err != nil {
			return opt, fmt.Errorf("--model: %w", err)
		}
		play.Models = append(play.Models, m)
	}
	play.LoadModel = func(ctx context.Context, dir string) (dash.StreamPolicy, tokenizer.Tokenizer, error) {
		initTorch(t)
		mo, err := modelOptions(t, d.device)
		if err != nil {
			return nil, nil, err
		}
		m, err := llm.Load(dir, mo)
		if err != nil {
			return nil, nil, err
		}
		tok, err := llm.LoadTokenizer(dir)
		if err != nil {
			m.Close()
			return nil, nil, err
		}
		return &modelStream{m: m, tok: tok}, tok, nil
	}
	if d.baseURL != "" {
		c := dash.OpenAIStreamConfig{BaseURL: d.baseURL, Model: d.apiModel}
		if d.keyE != "" {
			if c.APIKey = os.Getenv(d.keyE); c.APIKey == "" {
				return opt, fmt.Errorf("--api-key-env %s: the variable is empty", d.keyE)
			}
		}
		play.API = &c
	}
	opt.Play = play
	return opt, nil
}

func cmdDash(ctx context.Context, args []string) error {
	d, err := parseDashArgs(args)
	if err != nil {
		return err
	}
	opt, err := dashOptions(d)
	if err != nil {
		return err
	}
	srv, err := dash.New(opt)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", d.addr)
	if err != nil {
		return fmt.Errorf("dash: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(d.addr), ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	if d.token != "" {
		url += "?token=" + d.token
	}
	fmt.Printf("ragen dash: serving %s on %s (Ctrl-C stops)\n", strings.Join(d.runs, ", "), url)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		return nil
	}
}

// modelStream is a local model as a dash.StreamPolicy: one prompt at a
// time, text streamed as it is decoded.
type modelStream struct {
	mu  sync.Mutex
	m   *llm.Model
	tok tokenizer.Tokenizer
	n   uint64
}

func (s *modelStream) Stream(ctx context.Context, req ragen.GenRequest, emit func(string)) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := req.IDs
	if len(ids) == 0 {
		ids = s.tok.Encode(req.Prompt)
	}
	sp := req.Sampling
	o := llm.GenOptions{MaxNewTokens: sp.MaxNewTokens, Temperature: sp.Temperature, TopP: sp.TopP, TopK: max(sp.TopK, 0),
		StopStrings: sp.Stop, Seed: s.n, Stream: func(_ int, delta string) { emit(delta) }}
	if !sp.DoSample {
		o.Temperature = 0
	}
	s.n++
	res, err := s.m.Generate(ctx, s.tok, [][]int{ids}, o)
	if err != nil {
		return "", err
	}
	return res[0].Text, nil
}

// Close waits for a generation in flight (its session is cancelled
// first), then frees the model.
func (s *modelStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.Close()
	return nil
}
