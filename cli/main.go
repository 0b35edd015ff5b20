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

// commands lists every ragen command: its name, one line saying what it
// does, its usage lines and the help its --help prints after them (flags
// with their defaults).
var commands = []struct {
	name, line, usage, flags string
}{
	{"train", "train an agent with StarPO from a config; -m runs a sweep",
		"ragen train [--config-name NAME] [--config-path DIR] [--cfg job] [--device D] [key=value ...]\n" +
			"ragen train -m [--jobs N] [key=a,b,c ...] [hydra.sweep.dir=DIR]   (multirun, sweep summary)",
		configFlags("base") + deviceFlag +
			"  -m, --multirun         run every combination of the comma-separated values (a sweep)\n" +
			"  --jobs N               runs of a sweep at once (default 1)\n"},
	{"eval", "roll out a policy (model, API, oracle, random) on the validation envs",
		"ragen eval  [--config-name NAME] [--policy model|api|oracle|random] [--out FILE] [--max-failures N] [key=value ...]",
		configFlags("eval") + deviceFlag + strings.TrimPrefix(evalHelp, "\n")},
	{"sft", "supervised fine-tuning on the envs' demonstrations (a warm-up)",
		"ragen sft   [--config-name NAME] [--out DIR] [key=value ...]",
		configFlags("demo") + deviceFlag +
			"  --out DIR              where the model is saved (default trainer.default_local_dir/sft,\n" +
			"                         or checkpoints/sft)\n"},
	{"demo", "train a tiny agent on the CPU from scratch (what make demo runs)",
		"ragen demo  [--out DIR] [--quick] [--cfg job] [key=value ...]\n" +
			"ragen demo ragen2 [--out DIR] [--quick]   (RAGEN-2: filter vs no filter, collapse diagnostics)",
		"  --cfg job              print the composed config and exit, building and checking nothing (-c)\n" +
			"  --out DIR              where the run writes (default runs/demo; trainer.default_local_dir)\n" +
			"  --quick                a short smoke run (fewer SFT and training steps, 32 validation envs)\n" +
			"  ragen2                 the RAGEN-2 demo (config/demo_ragen2.yaml): SFT on input-dependent reasoning,\n" +
			"                         then one sweep of two StarPO runs (no filter; top_p 0.9 on reward variance)\n" +
			"                         with the collapse diagnostics on; writes DIR/ragen2.png, DIR/ragen2.md and\n" +
			"                         the runs DIR/0, DIR/1 (default runs/ragen2)\n"},
	{"view", "print the trajectories of a JSONL file as text",
		"ragen view  FILE.jsonl [--max N]",
		"  --max N                print at most N trajectories (default all)\n"},
	{"serve-envs", "serve every registered environment over HTTP",
		"ragen serve-envs [--addr 127.0.0.1:8111] [--token T] [--allow-dir DIR] [--max-envs N] [--idle-timeout 10m]",
		serveEnvsHelp},
	{"plot", "PNG plots of gradient analysis, reward distribution or reward matrix",
		"ragen plot  grad-analysis|reward-dist|reward-matrix FILE.jsonl... [--out DIR]",
		"  --out DIR              where the plots go (default: a folder next to the first file:\n" +
			"                         gradient_analysis, reward_dist or reward_matrix)\n"},
	{"visualize", "browse a trajectory file as web pages",
		"ragen visualize FILE.jsonl [--addr 127.0.0.1:8000]",
		"  --addr HOST:PORT       listen address (default 127.0.0.1:8000)\n"},
	{"dash", "web dashboard of run folders: metrics, trajectories, RAGEN-2, live play",
		"ragen dash  [--addr 127.0.0.1:8090] [--token T] [--model DIR] RUN_DIR... [key=value ...]",
		dashFlags},
	{"launch", "start N local ranks of a ragen command, as torchrun does",
		"ragen launch --nproc-per-node N [--nnodes M --node-rank R --master-addr A --master-port P] COMMAND ...",
		launchFlags},
	{"version", "print the version, the libtorch build and whether CUDA is available",
		"ragen version", ""},
}

// configFlags is the help of the config flags every config-driven command
// takes; def is the config it loads without --config-name.
func configFlags(def string) string {
	return "  --config-name NAME     the config to load (default " + def + "; -cn)\n" +
		"  --config-path DIR      a folder of your own configs, searched before the embedded ones (-cp)\n" +
		"  --cfg job              print the composed config and exit, building and checking nothing (-c)\n"
}

const deviceFlag = "  --device D             cpu, cuda or cuda:N (default system.device, else cpu)\n"

// usage is what `ragen` and `ragen help` print: one line per command.
var usage = func() string {
	var b strings.Builder
	b.WriteString("ragen: StarPO training and evaluation of LLM agents in multi-turn environments\n\nusage: ragen COMMAND [ARGS...]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.line)
	}
	b.WriteString("\n`ragen COMMAND --help` lists a command's flags with their defaults.\n" + overridesHelp)
	return b.String()
}()

const overridesHelp = `Overrides use upstream's Hydra syntax: a.b=1 (key must exist), +a.b=1 (new key),
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

// commandHelp prints cmd's usage lines, what it does and its flags.
func commandHelp(cmd string) {
	for _, c := range commands {
		if c.name != cmd {
			continue
		}
		fmt.Printf("usage:\n  %s\n\n%s.\n", strings.ReplaceAll(c.usage, "\n", "\n  "), capitalize(c.line))
		if c.flags != "" {
			fmt.Print("\n" + strings.TrimPrefix(c.flags, "\n"))
		}
		if cmd != "version" && cmd != "view" && cmd != "visualize" && cmd != "plot" && cmd != "launch" {
			fmt.Print("\n" + overridesHelp)
		}
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// isCommand reports whether name is one of the commands.
func isCommand(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Print(usage)
		return nil
	}
	cmd, rest := args[0], args[1:]
	if isCommand(cmd) && wantsHelp(cmd, rest) {
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
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return fmt.Errorf("unknown command %q (valid: %s)", cmd, strings.Join(names, ", "))
}
