package dash

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"ragen/env"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// StreamPolicy answers one prompt, calling emit with each piece of text as
// it is generated; it returns the whole generation (without the forced
// prefix, as ragen.Generation.Text).
type StreamPolicy interface {
	Stream(ctx context.Context, req ragen.GenRequest, emit func(delta string)) (string, error)
}

// PlayOptions configure the live play page.
type PlayOptions struct {
	// Tags are the env tags offered (custom_envs keys).
	Tags []string
	// Config returns the rollout config that plays one env of tag in val
	// mode (es_manager.val: one group of one env of tag).
	Config func(tag string) (ragen.Config, error)
	// Provider builds the envs (default ragen.DefaultProvider()).
	Provider ragen.EnvProvider
	// Models are model folders offered as policies; LoadModel loads one
	// (nil: no model policies).
	Models    []string
	LoadModel func(ctx context.Context, dir string) (StreamPolicy, tokenizer.Tokenizer, error)
	// API is the OpenAI-compatible endpoint (nil: none).
	API *OpenAIStreamConfig
	// MaxSessions bounds concurrent episodes (default 4).
	MaxSessions int
	// Idle ends a session nobody steps or watches for this long (default 10 min).
	Idle time.Duration
}

type player struct {
	opt      PlayOptions
	mu       sync.Mutex
	sessions map[string]*session
	modelMu  sync.Mutex
	models   map[string]loadedModel // by folder; kept until Close (sessions may share one)
	capMu    sync.Mutex
	caps     map[string]tagCaps // by tag, found once
}

// tagCaps says which built-in policies can play a tag's env: the oracle
// needs an env.Oracle or an action list, random actions an action list
// (env.ActionLookup); free-text envs (DeepCoder, SearchQA, MetaMathQA)
// have neither.
type tagCaps struct{ oracle, random bool }

// capsOf builds one env of tag (not reset) to see what it offers. An env
// that cannot be built says nothing: every policy is offered, and the
// episode reports the error.
func (p *player) capsOf(tag string) tagCaps {
	p.capMu.Lock()
	defer p.capMu.Unlock()
	if c, ok := p.caps[tag]; ok {
		return c
	}
	c := tagCaps{true, true}
	if cfg, err := p.opt.Config(tag); err == nil {
		if spec, ok := cfg.CustomEnvs[tag]; ok {
			if e, err := p.opt.Provider.NewEnv(tag, spec); err == nil {
				_, lookup := e.(env.ActionLookup)
				_, oracle := e.(env.Oracle)
				c = tagCaps{oracle: oracle || lookup, random: lookup}
				e.Close()
			}
		}
	}
	p.caps[tag] = c
	return c
}

// offers reports whether policy can play tag, and why not.
func (p *player) offers(tag, policy string) (bool, string) {
	c := p.capsOf(tag)
	switch {
	case policy == "oracle" && !c.oracle:
		return false, fmt.Sprintf("the oracle cannot play %s: its env has neither a solver nor a list of actions", tag)
	case policy == "random" && !c.random:
		return false, fmt.Sprintf("random actions cannot play %s: its env has no list of actions (it takes free text)", tag)
	}
	return true, ""
}

type loadedModel struct {
	pol StreamPolicy
	tok tokenizer.Tokenizer
}

func newPlayer(opt PlayOptions) (*player, error) {
	if opt.Config == nil {
		return nil, errors.New("dash: play needs PlayOptions.Config")
	}
	if len(opt.Tags) == 0 {
		return nil, errors.New("dash: play needs at least one env tag")
	}
	if opt.Provider == nil {
		opt.Provider = ragen.DefaultProvider()
	}
	if opt.MaxSessions <= 0 {
		opt.MaxSessions = 4
	}
	if opt.Idle <= 0 {
		opt.Idle = 10 * time.Minute
	}
	return &player{opt: opt, sessions: map[string]*session{}, models: map[string]loadedModel{}, caps: map[string]tagCaps{}}, nil
}

// PlayEvent is one server-sent event of a session.
type PlayEvent struct {
	ID   int    `json:"id"`
	Type string `json:"type"` // status, reset, turn, delta, result, done, fail
	// reset / result
	State string `json:"state,omitempty"`
	// turn
	Turn   int    `json:"turn"`
	Prompt string `json:"prompt,omitempty"`
	// delta
	Text string `json:"text,omitempty"`
	// result
	Response string   `json:"response,omitempty"`
	Think    string   `json:"think,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	Actions  []string `json:"actions,omitempty"`
	Executed []string `json:"executed,omitempty"`
	Reward   *float64 `json:"reward,omitempty"`
	Done     bool     `json:"done,omitempty"`
	// done
	Success *bool              `json:"success,omitempty"`
	Metrics map[string]jsonNum `json:"metrics,omitempty"`
	Error   string             `json:"error,omitempty"`
}

type session struct {
	id     string
	cancel context.CancelFunc
	mu     sync.Mutex
	cond   *sync.Cond
	events []PlayEvent
	ended  bool
	auto   bool
	steps  int // turns the user allowed
	last   time.Time
}

func (s *session) emit(e PlayEvent) {
	s.mu.Lock()
	e.ID = len(s.events)
	s.events = append(s.events, e)
	s.last = time.Now()
	s.cond.Broadcast()
	s.mu.Unlock()
}

// wait blocks until the user allows another turn (or auto is on).
func (s *session) wait(ctx context.Context, turn int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.auto && s.steps <= turn {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.cond.Wait()
	}
	return ctx.Err()
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (p *player) get(id string) (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.sessions[id]
	if !ok {
		return nil, notFound("no play session %q (it ended or expired)", id)
	}
	return s, nil
}

func (p *player) closeAll() {
	p.mu.Lock()
	for id, s := range p.sessions {
		s.cancel()
		delete(p.sessions, id)
	}
	p.mu.Unlock()
	p.modelMu.Lock()
	defer p.modelMu.Unlock()
	for dir, m := range p.models {
		if c, ok := m.pol.(interface{ Close() error }); ok {
			c.Close()
		}
		delete(p.models, dir)
	}
}

// reap drops idle sessions, and the oldest ended ones beyond
// 4 × MaxSessions (an ended session is kept for its events to be read
// again, but does not count against MaxSessions).
func (p *player) reap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	type endedAt struct {
		id   string
		last time.Time
	}
	var ended []endedAt
	for id, s := range p.sessions {
		s.mu.Lock()
		idle := time.Since(s.last) > p.opt.Idle
		done, last := s.ended, s.last
		s.mu.Unlock()
		if idle {
			s.cancel()
			delete(p.sessions, id)
		} else if done {
			ended = append(ended, endedAt{id, last})
		}
	}
	if extra := len(ended) - 4*p.opt.MaxSessions; extra > 0 {
		sort.Slice(ended, func(i, j int) bool { return ended[i].last.Before(ended[j].last) })
		for _, e := range ended[:extra] {
			delete(p.sessions, e.id)
		}
	}
}

// running counts the sessions whose episode has not ended (p.mu held).
func (p *player) running() int {
	n := 0
	for _, s := range p.sessions {
		s.mu.Lock()
		if !s.ended {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

type startRequest struct {
	Tag    string `json:"tag"`
	Seed   int64  `json:"seed"`
	Policy string `json:"policy"` // oracle, random, api, model:N
	Auto   bool   `json:"auto"`
}

func (s *Server) playOff(w http.ResponseWriter) bool {
	if s.play == nil {
		writeErr(w, &httpError{http.StatusNotFound, "play is off: ragen dash was started without env configs"})
		return true
	}
	return false
}

func (s *Server) apiPlayOptions(w http.ResponseWriter, r *http.Request) {
	if s.playOff(w) {
		return
	}
	type pol struct {
		ID    string `json:"id"`
		Label string `json:"label"`
	}
	pols := []pol{{"oracle", "oracle (env solver)"}, {"random", "random actions"}}
	if s.play.opt.LoadModel != nil {
		for i, m := range s.play.opt.Models {
			pols = append(pols, pol{"model:" + strconv.Itoa(i), "model " + m})
		}
	}
	if a := s.play.opt.API; a != nil {
		pols = append(pols, pol{"api", "API " + a.Model + " at " + a.BaseURL})
	}
	// tag_policies: the policies that can play each tag's env
	byTag := map[string][]string{}
	for _, t := range s.play.opt.Tags {
		ids := []string{}
		for _, p := range pols {
			if ok, _ := s.play.offers(t, p.ID); ok {
				ids = append(ids, p.ID)
			}
		}
		byTag[t] = ids
	}
	writeJSON(w, map[string]any{"tags": s.play.opt.Tags, "policies": pols, "tag_policies": byTag})
}

func (s *Server) apiPlayStart(w http.ResponseWriter, r *http.Request) {
	if s.playOff(w) {
		return
	}
	var req startRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeErr(w, badRequest("play start: want JSON {tag, seed, policy, auto}: %v", err))
		return
	}
	p := s.play
	known := false
	for _, t := range p.opt.Tags {
		known = known || t == req.Tag
	}
	if !known {
		writeErr(w, badRequest("unknown env tag %q (valid: %s)", req.Tag, strings.Join(p.opt.Tags, ", ")))
		return
	}
	if req.Seed < 0 {
		writeErr(w, badRequest("seed %d: want a non-negative integer", req.Seed))
		return
	}
	switch {
	case req.Policy == "oracle", req.Policy == "random":
	case req.Policy == "api" && p.opt.API != nil:
	case strings.HasPrefix(req.Policy, "model:") && p.opt.LoadModel != nil:
		n, err := strconv.Atoi(strings.TrimPrefix(req.Policy, "model:"))
		if err != nil || n < 0 || n >= len(p.opt.Models) {
			writeErr(w, badRequest("policy %q: no such model", req.Policy))
			return
		}
	default:
		writeErr(w, badRequest("policy %q is not offered (see /api/play/options)", req.Policy))
		return
	}
	if ok, why := p.offers(req.Tag, req.Policy); !ok {
		writeErr(w, badRequest("%s", why))
		return
	}
	p.reap()
	p.mu.Lock()
	if n := p.running(); n >= p.opt.MaxSessions {
		p.mu.Unlock()
		writeErr(w, &httpError{http.StatusTooManyRequests, fmt.Sprintf("%d play sessions are running: stop one first (an idle one ends after %v)", n, p.opt.Idle)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ss := &session{id: newID(), cancel: cancel, auto: req.Auto, last: time.Now()}
	ss.cond = sync.NewCond(&ss.mu)
	p.sessions[ss.id] = ss
	p.mu.Unlock()
	go func() {
		// wake waiters when the session is cancelled
		<-ctx.Done()
		ss.mu.Lock()
		ss.cond.Broadcast()
		ss.mu.Unlock()
	}()
	go func() {
		err := p.runEpisode(ctx, ss, req)
		if err != nil {
			ss.emit(PlayEvent{Type: "fail", Error: err.Error()})
		}
		ss.mu.Lock()
		ss.ended = true
		ss.cond.Broadcast()
		ss.mu.Unlock()
	}()
	writeJSON(w, map[string]string{"session": ss.id})
}

func (s *Server) sessionArg(w http.ResponseWriter, r *http.Request) *session {
	if s.playOff(w) {
		return nil
	}
	ss, err := s.play.get(r.URL.Query().Get("session"))
	if err != nil {
		writeErr(w, err)
		return nil
	}
	return ss
}

func (s *Server) apiPlayStep(w http.ResponseWriter, r *http.Request) {
	ss := s.sessionArg(w, r)
	if ss == nil {
		return
	}
	ss.mu.Lock()
	ss.steps++
	ss.last = time.Now()
	ss.cond.Broadcast()
	ss.mu.Unlock()
	writeJSON(w, map[string]bool{"ok": true})
}

func (s *Server) apiPlayAuto(w http.ResponseWriter, r *http.Request) {
	ss := s.sessionArg(w, r)
	if ss == nil {
		return
	}
	on := r.URL.Query().Get("on")
	if on != "0" && on != "1" {
		writeErr(w, badRequest("auto: want on=0 or on=1"))
		return
	}
	ss.mu.Lock()
	ss.auto = on == "1"
	ss.last = time.Now()
	ss.cond.Broadcast()
	ss.mu.Unlock()
	writeJSON(w, map[string]bool{"ok": true})
}

func (s *Server) apiPlayStop(w http.ResponseWriter, r *http.Request) {
	ss := s.sessionArg(w, r)
	if ss == nil {
		return
	}
	ss.cancel()
	s.play.mu.Lock()
	delete(s.play.sessions, ss.id)
	s.play.mu.Unlock()
	writeJSON(w, map[string]bool{"ok": true})
}

// apiPlayEvents streams a session's events as server-sent events, from
// Last-Event-ID (or ?from=) on, until the episode ends.
func (s *Server) apiPlayEvents(w http.ResponseWriter, r *http.Request) {
	ss := s.sessionArg(w, r)
	if ss == nil {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, errors.New("dash: streaming unsupported"))
		return
	}
	from := 0
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("from")} {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			from = n
			if v == r.Header.Get("Last-Event-ID") {
				from = n + 1
			}
			break
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	ctx := r.Context()
	stop := context.AfterFunc(ctx, func() {
		ss.mu.Lock()
		ss.cond.Broadcast()
		ss.mu.Unlock()
	})
	defer stop()
	for {
		ss.mu.Lock()
		for from >= len(ss.events) && !ss.ended && ctx.Err() == nil {
			ss.cond.Wait()
		}
		evs := append([]PlayEvent(nil), ss.events[min(from, len(ss.events)):]...)
		ended := ss.ended
		ss.last = time.Now()
		ss.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		for _, e := range evs {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, b)
			from = e.ID + 1
		}
		if ended && len(evs) == 0 {
			fmt.Fprint(w, "event: end\ndata: {}\n\n")
			fl.Flush()
			return
		}
		fl.Flush()
	}
}

// runEpisode plays one episode, emitting events as it goes.
func (p *player) runEpisode(ctx context.Context, ss *session, req startRequest) error {
	cfg, err := p.opt.Config(req.Tag)
	if err != nil {
		return err
	}
	var tok tokenizer.Tokenizer = tokenizer.NewByte()
	var pol StreamPolicy
	var es *ragen.EnvStateManager
	switch {
	case req.Policy == "oracle" || req.Policy == "random":
		noise := 0.0
		if req.Policy == "random" {
			noise = 1
		}
		d, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{Noise: noise, MaxActions: cfg.AgentProxy.MaxActionsPerTurn,
			Sep: cfg.AgentProxy.ActionSep, EnableThink: cfg.AgentProxy.EnableThink, Seed: uint64(req.Seed)},
			func(id int) env.BaseEnv { return es.Env(id) })
		if err != nil {
			return err
		}
		pol = policyStream{d}
	case req.Policy == "api":
		pol = NewOpenAIStream(*p.opt.API)
	default:
		n, _ := strconv.Atoi(strings.TrimPrefix(req.Policy, "model:"))
		ss.emit(PlayEvent{Type: "status", Text: "loading model " + p.opt.Models[n]})
		if pol, tok, err = p.loadModel(ctx, p.opt.Models[n]); err != nil {
			return err
		}
	}
	if es, err = ragen.NewEnvStateManager(cfg, env.ModeVal, p.opt.Provider); err != nil {
		return err
	}
	defer es.Close()
	cm, err := ragen.NewContextManager(cfg, env.ModeVal, tok, p.opt.Provider)
	if err != nil {
		return err
	}
	seed := req.Seed
	outs, err := es.Reset(ctx, &seed)
	if err != nil {
		return err
	}
	if len(outs) != 1 {
		return fmt.Errorf("dash: play config has %d envs, want 1", len(outs))
	}
	o := outs[0]
	ss.emit(PlayEvent{Type: "reset", State: o.History[0].State})
	sp := cfg.Sampling(env.ModeVal)
	for turn := 0; turn < cfg.AgentProxy.MaxTurn && len(outs) > 0; turn++ {
		if err := ss.wait(ctx, turn); err != nil {
			return err
		}
		prompts, err := cm.Prompts(outs)
		if err != nil {
			return err
		}
		pr := prompts[0]
		ss.emit(PlayEvent{Type: "turn", Turn: turn, Prompt: pr.Text})
		text, err := pol.Stream(ctx, ragen.GenRequest{EnvID: pr.EnvID, Turn: pr.Turn, Messages: pr.Messages, Prompt: pr.Text, IDs: pr.IDs, Sampling: sp},
			func(d string) { ss.emit(PlayEvent{Type: "delta", Turn: turn, Text: d}) })
		if err != nil {
			return fmt.Errorf("turn %d: generate: %w", turn, err)
		}
		in := cm.ParseResponse(text)
		in.EnvID = pr.EnvID
		if outs, err = es.Step(ctx, []ragen.EnvInput{in}); err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		ev := PlayEvent{Type: "result", Turn: turn, Response: in.LLMRawResponse, Actions: in.Actions, Done: len(outs) == 0}
		if ev.Actions == nil {
			ev.Actions = []string{}
		}
		if tm := thinkRe.FindStringSubmatch(in.LLMRawResponse); tm != nil {
			ev.Think = strings.TrimSpace(tm[1])
		}
		if am := answerRe.FindStringSubmatch(in.LLMRawResponse); am != nil {
			ev.Answer = strings.TrimSpace(am[1])
		}
		if h := o.History; len(h) >= 2 && h[len(h)-2].Acted {
			a := h[len(h)-2]
			rw := a.Reward.Value
			ev.Reward = &rw
			for _, x := range a.Actions {
				ev.Executed = append(ev.Executed, x.Text)
			}
			ev.State = h[len(h)-1].State
		}
		ss.emit(ev)
	}
	final := es.GetRolloutStates()
	done := PlayEvent{Type: "done", Metrics: map[string]jsonNum{}}
	if len(final) == 1 {
		for k, v := range final[0].Metrics {
			done.Metrics[k] = jsonNum(v)
		}
		succ := final[0].Metrics[final[0].Tag+"/success"] > 0
		done.Success = &succ
	}
	ss.emit(done)
	return nil
}

// loadModel returns the model policy of dir, loading it on first use.
// Loaded models stay in memory until the server closes: a session may be
// using one while another session starts.
func (p *player) loadModel(ctx context.Context, dir string) (StreamPolicy, tokenizer.Tokenizer, error) {
	p.modelMu.Lock()
	defer p.modelMu.Unlock()
	if m, ok := p.models[dir]; ok {
		return m.pol, m.tok, nil
	}
	pol, tok, err := p.opt.LoadModel(ctx, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	p.models[dir] = loadedModel{pol, tok}
	return pol, tok, nil
}

// policyStream adapts a ragen.Policy that cannot stream: the answer comes
// as one piece.
type policyStream struct{ p ragen.Policy }

func (s policyStream) Stream(ctx context.Context, req ragen.GenRequest, emit func(string)) (string, error) {
	g, err := s.p.Generate(ctx, []ragen.GenRequest{req})
	if err != nil {
		return "", err
	}
	if len(g) != 1 {
		return "", fmt.Errorf("policy returned %d generations for 1 request", len(g))
	}
	emit(g[0].Text)
	return g[0].Text, nil
}
