#!/usr/bin/env bash
# Builds libragen_torch.so, the standalone form of ragen's C++ shim
# (internal/torch/csrc/*.cc, unchanged), against a libtorch:
#   - the PyTorch installed for $PYTHON (a pip wheel ships torch/include and
#     torch/lib; CUDA is enabled when that torch was built with CUDA), or
#   - Debian's libtorch-dev when TORCH=system or $PYTHON has no torch.
# Go binaries built with `-tags torchshared` link this library instead of
# compiling the shim in (see doc/design.md, "CUDA and other libtorch builds").
#
# usage: scripts/build-shim.sh OUTDIR [SRCDIR]
#   LIBNAME  the library's file name (default libragen_torch.so)
#   CXXSTD   the C++ standard (default c++17; c++20 from PyTorch 2.11 on)
#   GLOO_INCLUDE  a folder holding gloo/ headers, used when the torch has none
#   JOBS     compiler processes at once (default: the number of cores)
set -euo pipefail
out=${1:?usage: build-shim.sh OUTDIR [SRCDIR]}
src=${2:-$(cd "$(dirname "$0")/.." && pwd)/internal/torch/csrc}
PYTHON=${PYTHON:-python3}
CXX=${CXX:-g++}
mkdir -p "$out"

flags=(-O2 -fPIC -fopenmp -Wno-deprecated-declarations -Wno-unused-parameter)
libs=()
info=""
if [[ ${TORCH:-} != system ]] && info=$("$PYTHON" - <<'PY' 2>/dev/null
import os, torch
print(os.path.dirname(torch.__file__))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(1 if torch.version.cuda else 0)
print(torch.__version__)
PY
) && [[ -d $(sed -n 1p <<<"$info")/include/ATen ]]; then
	T=$(sed -n 1p <<<"$info")
	abi=$(sed -n 2p <<<"$info")
	cuda=$(sed -n 3p <<<"$info")
	ver=$(sed -n 4p <<<"$info")
	echo "build-shim: PyTorch $ver at $T (cxx11 abi $abi, cuda $cuda)" >&2
	# PyTorch's headers need C++20 from about 2.12 on (cpp_extension
	# defaults to it since 2.11); the shims build in both standards
	IFS=. read -r vmaj vmin _ <<<"${ver%%+*}"
	if [[ -z ${CXXSTD:-} ]] && ((vmaj > 2 || (vmaj == 2 && vmin >= 11))); then CXXSTD=c++20; fi
	flags+=(-isystem "$T/include" -isystem "$T/include/torch/csrc/api/include" "-D_GLIBCXX_USE_CXX11_ABI=$abi")
	libs+=(-L"$T/lib" -Wl,-rpath,"$T/lib")
	# gloo's headers where the torch has none (PyTorch's wheels), from GLOO_INCLUDE
	if [[ ! -f $T/include/gloo/config.h && -n ${GLOO_INCLUDE:-} ]]; then flags+=(-isystem "$GLOO_INCLUDE"); fi
	# the OpenMP runtime the wheel's libtorch uses (see gen-torch-pc.sh); it
	# comes before the -lgomp that -fopenmp appends, which --as-needed drops
	gomp=$(ls "$T"/lib/libgomp-*.so* 2>/dev/null | head -n1 || true)
	[[ -n $gomp ]] && libs+=(-Wl,--as-needed "$gomp")
	if [[ $cuda == 1 ]]; then
		flags+=(-DRAGEN_WITH_CUDA)
		# a wheel's CUDA headers (cuda_runtime_api.h) live under site-packages/nvidia/*/include
		for d in "$T"/../nvidia/*/include; do [[ -d $d ]] && flags+=(-isystem "$d"); done
		if command -v nvcc >/dev/null; then flags+=(-isystem "$(dirname "$(command -v nvcc)")/../include"); fi
		for d in /usr/local/cuda/include; do [[ -d $d ]] && flags+=(-isystem "$d"); done
		libs+=(-Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed)
	fi
else
	echo "build-shim: Debian libtorch (/usr/include, /usr/lib)" >&2
fi
flags+=("-std=${CXXSTD:-c++17}")
libs+=(-ltorch -ltorch_cpu -lc10)
name=${LIBNAME:-libragen_torch.so}
# One compiler process per source file, $JOBS at a time (default: every
# core), then one link: the files are independent, and each takes seconds
# to minutes against libtorch's headers. Every file is compiled even when
# one fails, so one run shows every error.
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
obj=$(mktemp -d)
trap 'rm -rf "$obj"' EXIT
export CXX obj
printf '%s\0' "$src"/*.cc | xargs -0 -P "$jobs" -I{} bash -c '
	f=$1; shift
	o=$obj/$(basename "$f" .cc).o
	"$CXX" "$@" -c -o "$o" "$f" 2>"$o.log" || { echo "build-shim: $f failed:" >&2; grep -m 30 -A 3 "error" "$o.log" >&2 || head -n 60 "$o.log" >&2; exit 1; }
' _ {} "${flags[@]}" || { echo "build-shim: $name not built: a file failed (above); flags: ${flags[*]}" >&2; exit 1; }
"$CXX" "${flags[@]}" -shared -o "$out/$name" "$obj"/*.o "${libs[@]}"
echo "build-shim: wrote $out/$name ($(ls "$src"/*.cc | wc -l) files, $jobs at a time)" >&2
