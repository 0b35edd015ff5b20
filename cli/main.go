// Package cli is the ragen command line as a library: cmd/ragen is a
// one-line main over Main, and a research program that registers its own
// environments (env.Register), advantage estimators
// (algo.RegisterEstimator) or memories and then calls Main is a ragen
// binary that knows them, driven by the same YAML configs and overrides.
//
// ragen trains and evaluates LLM agents in multi-turn text environments
// with StarPO, driven by upstream RAGEN's YAML configs:
//
//	ragen train --config-name _2_sokoban key=value +new_key=value
//	ragen eval  --config-name eval [--policy model|api|oracle|random] key=value
//	ragen sft   --config-name demo
//	ragen demo
//	ragen view  trajectories.jsonl
//	ragen serve-envs --addr 127.0.0.1:8111
//	ragen dash runs/demo
//
// Configs are upstream's key tree (config/base.yaml and one file per
// experiment, embedded in the binary); --config-path DIR adds a directory of
// your own. Every key is validated before any work starts.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `ragen: StarPO training and evaluation of LLM agents in multi-turn environments

usage:
  ragen train [--config-name NAME] [--config-path DIR] [--cfg job] [key=value ...]
  ragen train -m [--jobs N] [key=a,b,c ...] [hydra.sweep.dir=DIR]   (multirun, sweep summary)
  ragen eval  [--config-name NAME] [--policy model|api|oracle|random] [--out FILE] [--max-failures N] [key=value ...]
  ragen sft   [--config-name NAME] [key=value ...]
  ragen demo  [--out DIR] [--quick]
  ragen demo ragen2 [--out DIR] [--quick]   (RAGEN-2: filter vs no filter, collapse diagnostics)
  ragen view  FILE.jsonl [--max N]
  ragen serve-envs [--addr 127.0.0.1:8111] [--token T] [--allow-dir DIR] [--max-envs N] [--idle-timeout 10m]
  ragen plot  grad-analysis|reward-dist|reward-matrix FILE.jsonl... [--out DIR]
  ragen visualize FILE.jsonl [--addr 127.0.0.1:8000]
  ragen dash  [--addr 127.0.0.1:8090] [--token T] [--model DIR] RUN_DIR...
  ragen launch --nproc-per-node N [--nnodes M --node-rank R --master-addr A --master-port P] COMMAND ...
  ragen version

Every command takes --help. Overrides use upstream's Hydra syntax: a.b=1 (key must exist), +a.b=1 (new key),
++a.b=1 (add or replace), ~a.b (delete). Unknown keys name the nearest valid key.
`

// Main runs the ragen command line on args (without the program name) and
// returns the process exit code: 0, 1 on an error (printed to stderr with
// one "ragen:" prefix), 128 plus the signal's number when a signal stopped
// it (130 for SIGINT, 143 for SIGTERM; the message names the signal).
// SIGINT and SIGTERM cancel the running command; one that stops cleanly
// on them (serve-envs) returns 0. A program that registers its own
// environments, reward estimators or losses and then calls Main is a ragen
// binary that knows them:
//
//	func main() {
//		env.Register("my_env", newMyEnv)
//		os.Exit(cli.Main(os.Args[1:]))
//	}
func Main(args []string) int {
	ctx, stop := signalContext(context.Background())
	defer stop()
	err := Run(ctx, args)
	if err == nil {
		return 0
	}
	code, msg := exitCode(ctx, err)
	fmt.Fprintln(os.Stderr, msg)
	return code
}

// signalError is the cause of a context cancelled by a signal; it is a
// context.Canceled.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string {
	name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[e.sig]
	if name == "" {
		name = e.sig.String()
	}
	return "stopped by " + name
}

func (e *signalError) Unwrap() error { return context.Canceled }

// signalContext is signal.NotifyContext for SIGINT and SIGTERM whose
// cause (context.Cause) is a *signalError naming the signal. Signals stay
// caught until stop.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			sig, _ := s.(syscall.Signal)
			cancel(&signalError{sig: sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// exitCode is Main's exit code and message for err: a cancellation caused
// by a signal exits 128+signal and says which.
func exitCode(ctx context.Context, err error) (int, string) {
	msg := errorLine(err)
	if !errors.Is(err, context.Canceled) {
		return 1, msg
	}
	var se *signalError
	if errors.As(err, &se) {
		return 128 + int(se.sig), msg
	}
	if errors.As(context.Cause(ctx), &se) {
		return 128 + int(se.sig), msg + " (" + se.Error() + ")"
	}
	return 130, msg
}

// Run runs one ragen command (train, eval, sft, demo, view, serve-envs,
// launch, dash, plot, visualize, version) with its arguments and returns
// its error; ctx cancels it.
func Run(ctx context.Context, args []string) error { return run(ctx, args) }

// errorLine is the message main prints: one "ragen:" prefix, also when
// the error comes from package ragen (whose errors start with "ragen: ").
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "ragen: ") {
		return msg
	}
	return "ragen: " + msg
}

// wantsHelp reports whether a subcommand's arguments ask for help (-h,
// --help or help as an argument; for launch only before the command it
// runs).
func wantsHelp(cmd string, rest []string) bool {
	for _, a := range rest {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "help":
			if cmd != "view" { // view's argument is a file name
				return true
			}
		}
		if cmd == "launch" && !strings.HasPrefix(a, "-") {
			return false
		}
	}
	return false
}

// commandHelp prints the usage line of cmd from the usage text and, for
// the commands with a flag set of their own, its flags.
func commandHelp(cmd string) {
	for _, line := range strings.Split(usage, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "ragen "+cmd+" ") || strings.TrimSpace(line) == "ragen "+cmd {
			fmt.Println("usage:\n" + line)
		}
	}
	if h, ok := extraHelp[cmd]; ok {
		fmt.Print(h)
	}
	fmt.Print(usage[strings.Index(usage, "Overrides use"):])
}

// extraHelp is per-command detail beyond the usage line.
var extraHelp = map[string]string{
	"serve-envs": serveEnvsHelp,
	"eval":       evalHelp,
	"demo": "\n  --out DIR   where the run writes (trainer.default_local_dir)\n  --quick     a short smoke run (fewer SFT and training steps, 32 validation envs)\n" +
		"  ragen2      the RAGEN-2 demo (config/demo_ragen2.yaml): SFT on input-dependent reasoning, then one sweep of\n" +
		"              two StarPO runs (no filter; top_p 0.9 on reward variance) with the collapse diagnostics on;\n" +
		"              writes DIR/ragen2.png, DIR/ragen2.md and the runs DIR/0, DIR/1 (default runs/ragen2)\n\n",
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Print(usage)
		return nil
	}
	cmd, rest := args[0], args[1:]
	if strings.Contains(usage, "  ragen "+cmd+" ") && wantsHelp(cmd, rest) {
		commandHelp(cmd)
		return nil
	}
	switch cmd {
	case "train":
		return cmdTrain(ctx, rest)
	case "eval":
		return cmdEval(ctx, rest)
	case "sft":
		return cmdSFT(ctx, rest)
	case "demo":
		return cmdDemo(ctx, rest)
	case "view":
		return cmdView(rest)
	case "serve-envs":
		return cmdServeEnvs(ctx, rest)
	case "plot":
		return cmdPlot(rest)
	case "visualize":
		return cmdVisualize(ctx, rest)
	case "dash":
		return cmdDash(ctx, rest)
	case "launch":
		return cmdLaunch(ctx, rest)
	case "version":
		fmt.Println(version())
		return nil
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	return fmt.Errorf("unknown command %q (valid: train, eval, sft, demo, view, serve-envs, plot, visualize, dash, launch, version)", cmd)
}
