// Package track records training metrics: a console progress bar with a
// veRL-style per-step metrics line, a JSONL file, TensorBoard event files and
// PNG plots of the main curves.
//
// It is the Go counterpart of veRL's Tracking class as RAGEN uses it
// (trainer.logger: [console, wandb]). Every backend implements Logger:
//
//	Log(step, metrics)  // one call per training step
//	Close()
//
// New builds a Logger from upstream's backend names:
//
//   - "console": a tqdm-like progress bar ("Training Progress: 12%|...| 12/100
//     [01:23<10:02, 6.92s/step, reward=0.512]") that redraws in place on a
//     terminal and prints plain lines otherwise (CI logs), plus veRL's
//     LocalLogger line "step:N - key:value - ..." with keys sorted and
//     values printed like Python's repr(float).
//   - "file" (veRL's name) or "jsonl": one JSON object per step,
//     {"step":N,"data":{...}} as veRL's FileLogger writes it, NaN and ±Inf as
//     null, written with one write(2) per step, appended to on resume after
//     Truncate has dropped the steps a killed run logged past its checkpoint.
//     ReadJSONL and DecodeJSONL read such files back (also veRL's files with
//     Python's NaN/Infinity tokens).
//   - "tensorboard": events.out.tfevents.<unix>.<host> files in TFRecord
//     framing with hand-encoded Event protos (file_version "brain.Event:2",
//     one Summary with a simple_value per metric per step). On resume a
//     SessionLog START event at the resume step makes TensorBoard purge the
//     killed run's later points, as torch's SummaryWriter(purge_step=...) does.
//     ReadEvents and DecodeEvents read the scalars back (checksums verified,
//     START purges applied).
//
// Upstream's remote backends (wandb, swanlab, mlflow, vemlp_wandb, clearml,
// trackio) need an account and a network; New rejects them with an error
// that lists the valid names.
//
// Plot and PlotJSONL draw one PNG per main curve (success, reward, entropy,
// KL, filter kept ratio, collapse MI, validation success) and a summary.png
// grid, with a small built-in bitmap font and no dependencies beyond the
// standard library. Progress is a generic progress bar for other loops (SFT,
// evaluation).
//
// Loggers are meant to be driven by the training loop's goroutine; they are
// not safe for concurrent use (Progress is).
//
// Deliberate differences from upstream are listed in
// doc/divergences/track.md.
package track
