#!/usr/bin/env bash
# gpu-check.sh: ragen's GPU check, run from an unpacked `make gpu-bundle`
# on a machine with PyTorch (and, for the CUDA steps, a GPU) but no Go:
#
#   1. build libragen_torch.so and libragen_dist.so against $PYTHON's
#      PyTorch (CUDA when it has it), one compiler process per file;
#   2. the torch, llm, dist and starpo tests, RAGEN_TEST_DEVICE=cuda (the
#      device-aware tests: tensors, llm parity and generation, mixed
#      precision) where CUDA is there, else cpu;
#   3. dist's NCCL test (2 ranks on one GPU) [CUDA only];
#   4. the ragen CLI: the demo's quick run, then `ragen train` for two steps
#      on the model it exported, both on cuda:0 (cpu without CUDA);
#   5. gpubench: decode and training at Qwen2.5-0.5B and -1.5B shapes
#      against Hugging Face transformers [CUDA only; without CUDA its tiny
#      shapes prove the benchmark runs].
#
# Every step is timed and bounded; a summary table ends the output and is
# also written to $OUT/gpu-check.txt when OUT is set, after every step, so
# a run cut short still leaves what it did (the whole output goes to
# $OUT/gpu-check.log). Exit status 0 when no step failed (skipped steps do
# not fail).
#
# PYTHON    the interpreter whose torch to build against (default python3)
# STEPS     the steps to run (default "build test nccl cli bench")
# DEADLINE  seconds after which the steps not yet started are skipped
#           (default 480: the GPU machine's one call)
set -uo pipefail
if [[ -n ${OUT:-} && -d ${OUT:-} && -z ${GPU_CHECK_LOGGED:-} ]]; then
	export GPU_CHECK_LOGGED=1
	"$0" "$@" 2>&1 | tee "$OUT/gpu-check.log"
	exit "${PIPESTATUS[0]}"
fi
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
STEPS=${STEPS:-build test nccl cli bench}
DEADLINE=${DEADLINE:-480}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# out of the caller's folder: a checkout's torch/ there would shadow PyTorch
cd "$work" || exit 1
summary=()
failed=0
t_all=$SECONDS

has() { [[ " $STEPS " == *" $1 "* ]]; }
write_summary() {
	{
		echo
		echo "gpu-check summary ($dev, $((SECONDS - t_all)) s in all):"
		printf '%s\n' "${summary[@]}"
	} >"$work/summary"
	[[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$work/summary" "$OUT/gpu-check.txt"
	return 0
}
record() {
	summary+=("$(printf '%-44s %-8s %6s s  %s' "$1" "$2" "$3" "${4:-}")")
	[[ $2 == FAILED ]] && failed=1
	write_summary
}
# step NAME LIMIT_S CMD...: runs CMD with a time limit (cut to what is left
# of DEADLINE), prints its output, records the result
step() {
	local name=$1 limit=$2 t0=$SECONDS rc left
	shift 2
	left=$((DEADLINE - (SECONDS - t_all)))
	if ((left < 20)); then
		record "$name" skipped "-" "past the deadline ($DEADLINE s)"
		return 1
	fi
	((limit > left)) && limit=$left
	echo "== $name (at most $limit s)"
	timeout --kill-after=10 "$limit" "$@"
	rc=$?
	local note=""
	((rc == 124 || rc == 137)) && note="timed out after $limit s"
	if ((rc == 0)); then record "$name" ok $((SECONDS - t0)); else record "$name" FAILED $((SECONDS - t0)) "${note:-exit $rc}"; fi
	return $rc
}

info=$("$PYTHON" -c 'import os, torch; print(os.path.dirname(torch.__file__)); print(torch.__version__); print(int(torch.cuda.is_available())); print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")' 2>&1) || {
	echo "gpu-check: $PYTHON cannot import torch: $info" >&2
	exit 1
}
tdir=$(sed -n 1p <<<"$info")
cuda=$(sed -n 3p <<<"$info")
echo "gpu-check: bundle $(cat "$here/COMMIT" 2>/dev/null), PyTorch $(sed -n 2p <<<"$info") at $tdir, CUDA $([[ $cuda == 1 ]] && sed -n 4p <<<"$info" || echo none), $(nproc) cores"
echo "gpu-check: $(${CXX:-g++} --version 2>&1 | head -n1); $(uname -sr); $(ldd --version 2>&1 | head -n1)"
"$PYTHON" -c 'import transformers; print("gpu-check: transformers", transformers.__version__)' 2>/dev/null || echo "gpu-check: no transformers"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu-check: /'
dev=cpu
[[ $cuda == 1 ]] && dev=cuda:0

if has build; then
	# the two libraries side by side, each one compiler process per file;
	# without the dist library the torch and llm tests still run
	t0=$SECONDS
	# gloo's headers travel with the bundle for a torch without them (wheels);
	# if they do not fit this torch, the library is built without gloo
	(
		d=$here/src/internal/dist/csrc
		if [[ -d $here/gloo-include ]]; then
			PYTHON=$PYTHON LIBNAME=libragen_dist.so GLOO_INCLUDE=$here/gloo-include timeout 400 "$here/build-shim.sh" "$here/lib" "$d" && exit 0
			echo "gpu-check: the dist library did not build with the bundle's gloo headers (above); again without gloo"
		fi
		PYTHON=$PYTHON LIBNAME=libragen_dist.so timeout 300 "$here/build-shim.sh" "$here/lib" "$d"
	) >"$work/dist-build.log" 2>&1 &
	dpid=$!
	step "build libragen_torch.so ($(nproc) cores)" 400 env PYTHON="$PYTHON" "$here/build-shim.sh" "$here/lib" "$here/src/internal/torch/csrc"
	rt=$?
	wait $dpid
	rd=$?
	echo "== build libragen_dist.so"
	cat "$work/dist-build.log"
	if ((rd == 0)); then record "build libragen_dist.so" ok $((SECONDS - t0)); else record "build libragen_dist.so" FAILED $((SECONDS - t0)) "exit $rd"; fi
	if ((rt != 0)); then
		cat "$work/summary"
		exit 1
	fi
fi
# the libraries built above, then the torch they link; Debian keeps
# libtorch in the system folders (no lib/ under its torch package)
export LD_LIBRARY_PATH=$here/lib:$tdir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export RAGEN_TEST_DEVICE=${RAGEN_TEST_DEVICE:-$([[ $cuda == 1 ]] && echo cuda || echo cpu)}

if has test; then
	for p in torch llm dist starpo; do
		# dist's NCCL test is step 3
		skip=()
		[[ $p == dist ]] && skip=(-test.skip '^TestNCCL$')
		pushd "$here/pkg/$p" >/dev/null
		step "test $p (RAGEN_TEST_DEVICE=$RAGEN_TEST_DEVICE)" 420 ./test -test.timeout 400s "${skip[@]}" ${TESTFLAGS:-}
		popd >/dev/null
	done
fi

if has nccl; then
	if [[ $cuda == 1 ]]; then
		pushd "$here/pkg/dist" >/dev/null
		step "dist NCCL (2 ranks, cuda:0)" 200 ./test -test.run '^TestNCCL$' -test.v -test.timeout 180s
		popd >/dev/null
	else
		record "dist NCCL" skipped "-" "no CUDA"
	fi
fi

if has cli; then
	run=$work/demo
	step "ragen demo --quick on $dev" 400 "$here/bin/ragen" demo --quick --out "$run" trainer.device="$dev" \
		trainer.total_training_steps=2 trainer.test_freq=2 sft.steps=20
	if [[ -d $run/final ]]; then
		step "ragen train, 2 steps on $dev" 400 "$here/bin/ragen" train --config-name _1_bandit model_path="$run/final" \
			trainer.device="$dev" trainer.total_training_steps=2 trainer.test_freq=-1 trainer.save_freq=-1 \
			trainer.default_local_dir="$work/train" es_manager.train.env_groups=4 es_manager.train.group_size=4 \
			es_manager.train.env_configs.n_groups=[4] es_manager.val.env_groups=8 es_manager.val.env_configs.n_groups=[4,4] \
			ppo_mini_batch_size=16 micro_batch_size_per_gpu=8 actor_rollout_ref.rollout.response_length=16
	else
		record "ragen train, 2 steps on $dev" FAILED "-" "the demo exported no model ($run/final)"
	fi
fi

if has bench; then
	if [[ $cuda == 1 ]]; then
		step "gpubench (0.5B, 1.5B shapes vs transformers)" 420 "$here/bin/gpubench" -device cuda:0 -reps 2 -dir "$here/bench" -python "$PYTHON"
	else
		step "gpubench -quick on cpu (proof only)" 300 "$here/bin/gpubench" -quick -device cpu -reps 1 -dir "$here/bench" -python "$PYTHON"
		record "gpubench at Qwen shapes" skipped "-" "no CUDA"
	fi
fi

write_summary
cat "$work/summary"
exit $failed
