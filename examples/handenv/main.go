// Handenv: drive an environment by hand. Pick a tag of upstream's tag table
// (config/envs.yaml: CoordSokoban, FrozenLake, Bandit, Countdown, ...) and
// a seed, then type one action per line; each step prints the reward, the
// done flag, the info and the new state. "?" asks the env's solver (where it
// has one) for the next moves, "actions" lists the discrete actions, "quit"
// ends. Lines can come from a pipe:
//
//	go run . -tag CoordSokoban -seed 3
//	printf 'Up\nLeft\n' | go run . -tag CoordSokoban -seed 3
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"ragen/env"
	_ "ragen/env/all"
)

func main() {
	tag := flag.String("tag", "CoordSokoban", "env tag of config/envs.yaml")
	seed := flag.Int64("seed", 0, "reset seed (an initial state)")
	flag.Parse()
	if err := run(context.Background(), *tag, *seed, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "handenv:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tagName string, seed int64, in io.Reader, w io.Writer) error {
	tags, err := env.DefaultTags()
	if err != nil {
		return err
	}
	tag, ok := tags[tagName]
	if !ok {
		names := make([]string, 0, len(tags))
		for n := range tags {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown tag %q (valid: %s)", tagName, strings.Join(names, ", "))
	}
	e, err := tag.Build()
	if err != nil {
		return err
	}
	defer e.Close()
	obs, err := e.Reset(ctx, seed, env.ModeVal)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s (env_type %s), seed %d\n%s\n", tagName, tag.EnvType, seed, obs)
	total := 0.0
	sc := bufio.NewScanner(in)
	for fmt.Fprint(w, "> "); sc.Scan(); fmt.Fprint(w, "> ") {
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			continue
		case "quit", "exit":
			return nil
		case "?":
			if o, ok := env.Innermost(e).(env.Oracle); ok {
				plan, found, err := o.OracleActions(5)
				fmt.Fprintf(w, "solver: %v (found %v, err %v)\n", plan, found, err)
			} else {
				fmt.Fprintln(w, "this env has no solver")
			}
			continue
		case "actions":
			if l, ok := env.Innermost(e).(env.ActionLookup); ok {
				fmt.Fprintln(w, l.ActionLookup())
			} else {
				fmt.Fprintln(w, "free-text actions")
			}
			continue
		}
		a := env.Action{Text: line}
		if l, ok := env.Innermost(e).(env.ActionLookup); ok {
			for id, name := range l.ActionLookup() {
				if strings.EqualFold(name, line) {
					a = env.Action{ID: id, Text: name}
				}
			}
		}
		r, err := e.Step(ctx, a)
		if err != nil {
			return err
		}
		total += r.Reward
		fmt.Fprintf(w, "reward %g (total %g)  done %v  info %v\n%s\n", r.Reward, total, r.Done, r.Info, e.Render())
		if r.Done {
			fmt.Fprintln(w, "episode over")
			return nil
		}
	}
	fmt.Fprintln(w)
	return sc.Err()
}
