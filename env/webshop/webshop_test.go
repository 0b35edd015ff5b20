package webshop_test

import (
	"context"
	"math/rand"
	"net"
	_ "ragen/env/all"
	"reflect"
	"strings"
	"testing"

	"ragen/config"
	"ragen/env"
	"ragen/env/webshop"
	"ragen/env/webshop/bridgetest"
)

const tail = "We must buy a product within 10 actions. It doesn't have to match perfectly with description.\n" +
	"Search term should not include details like size, color.\n" +
	"Never search for more than 2 times.\n" +
	"Do not be too strict about the description, it's more important to buy one that is close enough within action limit.\n" +
	"Prioritize click a product in the current page over going to next page.\n" +
	"Almost never click[next >] for more than 2 times.\n" +
	"Almost never click[< prev] unless you are sure the product is on one of the previous pages.\n" +
	"If you have less than 3 actions left, just buy the first product you see in the current page.\n" +
	"If an matching option exists, make sure to click[size] then click[color], one at a time, before click[buy now], but don't have to if only 1 action left, in that case you just click[buy now]. Never click description.\n" +
	" You must choose from these actions:"

// goal reproduces upstream's goal index: split by mode, then Python's
// Random(42).shuffle(range(2000)); checked against the bridge on a few
// seeds through the instruction text.
func TestEpisodeThroughBridge(t *testing.T) {
	url := bridgetest.Start(t, false)
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	tag := tags["WebShop"]
	tag.EnvConfig = map[string]any{"dataset": "small", "bridge_url": url}
	e, err := tag.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	obs, err := e.Reset(ctx, 3, env.ModeVal)
	if err != nil {
		t.Fatal(err)
	}
	// Python: p = list(range(2000)); random.Random(42).shuffle(p); p[3 % 1000 + 500] == 835.
	// service-envs.md §4: reset returns the simulator's own observation
	// (the fake's search page), the render starts with the instruction.
	want := "Instruction: [SEP] find item 835 (small)." + tail + "search[<content>]."
	if obs != "WebShop [SEP] Instruction: [SEP] find item 835 [SEP] Search" || e.Render() != want {
		t.Fatalf("reset obs %q render\n%q\nwant\n%q", obs, e.Render(), want)
	}
	step := func(a string) env.StepResult {
		r, err := e.Step(ctx, env.Action{Text: a})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// service-envs.md §4 "Step result": the eight keys with their types
	// (success flags are ints); the observation is the simulator's text.
	glue := func(reward float64, raw any, effective, valid bool, success, purchase, eop int) env.Info {
		return env.Info{"reward": reward, "raw_reward": raw, "action_is_effective": effective, "action_is_valid": valid,
			"success": success, "success_purchase": purchase, "success_find": success, "end_of_page": eop}
	}
	check := func(a string, wantObs string, wantInfo env.Info, done bool) {
		t.Helper()
		r := step(a)
		if r.Observation != wantObs || r.Done != done || r.Reward != wantInfo["reward"] || r.RewardIsInt || !reflect.DeepEqual(r.Info, wantInfo) {
			t.Errorf("%s: obs %q done %v reward %v info %#v\nwant obs %q done %v info %#v", a, r.Observation, r.Done, r.Reward, r.Info, wantObs, done, wantInfo)
		}
	}
	searchPage := "WebShop [SEP] Instruction: [SEP] find item 835 [SEP] Search"
	results := "[button] Back to Search [button_] [SEP] Page 1 [SEP] [button] B0001 [button_] Red shoe"
	page2 := "[button] Back to Search [button_] [SEP] Page 2 (end)"
	item := "[button] Back to Search [button_] [SEP] Red shoe [SEP] [button] Buy Now [button_]"
	check("click[b0001]", searchPage, glue(0, 0, false, false, 0, 0, 0), false) // no-op: raw int 0
	check("search[ ]", results, glue(0, 0.0, true, true, 0, 0, 0), false)       // " " is a valid argument
	if !strings.HasSuffix(e.Render(), "click[back to search], click[next >], click[b0001].") {
		t.Errorf("results render %q", e.Render())
	}
	check("search[again]", results, glue(0, 0.0, false, false, 0, 0, 0), false) // QUIRK: no search bar, still searched
	check("click[next >]", page2, glue(0, 0.0, true, true, 0, 0, 1), false)     // next > dropped from the display
	if !strings.HasSuffix(e.Render(), ":click[back to search], click[< prev].") {
		t.Errorf("page 2 render %q", e.Render())
	}
	check("click[next >]", page2, glue(0, 0.0, false, true, 0, 0, 1), false) // still valid and clickable
	check("click[< prev]", results, glue(0, 0.0, true, true, 0, 0, 0), false)
	check("click[B0001]", item, glue(0, 0.0, true, true, 0, 0, 0), false)
	// goal 835 is odd: the simulator's score is 0.5, upstream's reward 0;
	// the simulator's own info keys pass through unchanged.
	buy := glue(0, 0.5, true, true, 0, 1, 0)
	for k, v := range map[string]any{"r_type": 1.0, "r_att": 0.5, "w_att": 0.25, "query_match": true, "category_match": false,
		"title_score": 0.75, "r_price": true, "w_price": 0.25, "note": "fake purchase"} {
		buy[k] = v
	}
	check("click[buy now]", "Thank you for shopping with us!", buy, true)

	if _, err := e.Reset(ctx, 0, env.ModeVal); err != nil { // p[500] is even in this permutation
		t.Fatal(err)
	}
	if !strings.Contains(e.Render(), "find item 1384 ") {
		t.Fatalf("%q", e.Render())
	}
	step("search[x]")
	step("click[b0001]")
	if r := step("click[buy now]"); r.Reward != 1 || r.Info["success"] != 1 || r.Info["success_find"] != 1 || r.Info["raw_reward"] != 1.0 {
		t.Errorf("even goal: %+v", r)
	}
	if _, err := e.Reset(ctx, 7, env.Mode("test")); err != nil || !strings.Contains(e.Render(), "find item 1432 ") {
		t.Errorf("test mode: %v %q", err, e.Render())
	}
	if _, err := e.Reset(ctx, 2500, env.ModeTrain); err != nil || !strings.Contains(e.Render(), "find item 1776 ") {
		t.Errorf("train mode: %v %q", err, e.Render())
	}
	// Any other mode is an error, not train (service-envs.md §4).
	for _, m := range []env.Mode{"", "eval", "Train"} {
		if _, err := e.Reset(ctx, 1, m); err == nil || !strings.Contains(err.Error(), "want train, val or test") {
			t.Errorf("mode %q: %v", m, err)
		}
	}
}

// The goal permutation above (835, 1384, 1432, 1776) comes from CPython; a
// Go shuffle must not agree by accident, which would make the test weak.
func TestPermutationIsPythons(t *testing.T) {
	p := rand.New(rand.NewSource(42)).Perm(2000)
	if p[503] == 835 && p[500] == 1384 {
		t.Fatal("Go's permutation matches Python's: the goal checks above cannot tell them apart")
	}
}

func TestFullDatasetAndErrors(t *testing.T) {
	url := bridgetest.Start(t, false)
	e, err := env.New("webshop", map[string]any{"dataset": "full", "bridge_url": url})
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(context.Background(), 1, env.ModeVal)
	if !strings.Contains(e.Render(), "(full).") {
		t.Errorf("%q", e.Render())
	}
	e.Close()
	if _, err := env.New("webshop", map[string]any{"dataset": "medium"}); err == nil || !strings.Contains(err.Error(), "dataset must be either 'small' or 'full'") {
		t.Errorf("%v", err)
	}
	if _, err := env.New("webshop", map[string]any{"server": "x"}); err == nil || !strings.Contains(err.Error(), "leave it null") {
		t.Errorf("%v", err)
	}
	// Few goals: construction works (as upstream); train resets and
	// indices past the goals fail.
	few, err := env.New("webshop", map[string]any{"bridge_url": url, "limit_goals": 600})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := few.Reset(context.Background(), 1, env.ModeTrain); err == nil || !strings.Contains(err.Error(), "more than 1500") {
		t.Errorf("few goals, train: %v", err)
	}
	if _, err := few.Reset(context.Background(), 150, env.ModeVal); err == nil || !strings.Contains(err.Error(), "goal index 650 out of range") {
		t.Errorf("few goals, val: %v", err)
	}
	if _, err := few.Reset(context.Background(), 499, env.Mode("test")); err != nil {
		t.Errorf("few goals, test: %v", err)
	}
	few.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	_, err = env.New("webshop", map[string]any{"bridge_url": dead})
	if err == nil || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "scripts/envbridge.py") {
		t.Errorf("dead bridge: %v", err)
	}
	_ = webshop.DefaultBridgeURL
}

// service-envs.md §4: each env has its own session prefix, so the envs of
// a group, which reset to the same goal, do not share the simulator's
// per-session state (the fake keeps it in one process-wide table, as
// webshop-minimal's SimServer does).
func TestGroupEnvsDoNotShareASession(t *testing.T) {
	url := bridgetest.Start(t, false)
	ctx := context.Background()
	var es [2]env.BaseEnv
	for i := range es {
		e, err := env.New("webshop", map[string]any{"bridge_url": url})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, err := e.Reset(ctx, 7, env.ModeVal); err != nil {
			t.Fatal(err)
		}
		es[i] = e
	}
	if r, err := es[0].Step(ctx, env.Action{Text: "search[red shoe]"}); err != nil || r.Info["action_is_valid"] != true {
		t.Fatalf("search: %+v %v", r, err)
	}
	// the second env's reset must not send the first back to the search page
	if _, err := es[1].Reset(ctx, 7, env.ModeVal); err != nil {
		t.Fatal(err)
	}
	r, err := es[0].Step(ctx, env.Action{Text: "click[b0001]"})
	if err != nil || r.Info["action_is_valid"] != true || !strings.Contains(r.Observation, "Buy Now") {
		t.Fatalf("click in the first env after the second's reset: %+v %v", r, err)
	}
}

func BenchmarkReset(b *testing.B) {
	url := bridgetest.Start(b, false)
	e, err := env.New("webshop", map[string]any{"bridge_url": url})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var seed int64
	for b.Loop() {
		if _, err := e.Reset(ctx, seed, env.ModeTrain); err != nil {
			b.Fatal(err)
		}
		seed++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resets/s")
}

func BenchmarkStep(b *testing.B) {
	url := bridgetest.Start(b, false)
	e, err := env.New("webshop", map[string]any{"bridge_url": url})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	e.Reset(ctx, 0, env.ModeTrain)
	acts := []string{"search[shoe]", "click[back to search]"}
	i := 0
	for b.Loop() {
		if _, err := e.Step(ctx, env.Action{Text: acts[i%2]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// config/eval_webshop.yaml loads and validates (its WebShop tag is built
// against the bridge during validation).
func TestEvalConfig(t *testing.T) {
	url := bridgetest.Start(t, false)
	tree, err := config.Load("eval_webshop", []string{"+custom_envs.WebShop.env_config.bridge_url=" + url})
	if err != nil {
		t.Fatal(err)
	}
	if err := config.Validate(tree); err != nil {
		t.Fatal(err)
	}
	tree, err = config.Load("eval_webshop", []string{"+custom_envs.WebShop.env_config.bridge_url=http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if err := config.Validate(tree); err == nil || !strings.Contains(err.Error(), "scripts/envbridge.py") {
		t.Fatalf("without a bridge: %v", err)
	}
}
