#!/usr/bin/env bash
# Writes DIR/ragen-torch.pc describing the libtorch of $PYTHON's PyTorch, for
#   PKG_CONFIG_PATH=DIR go test -tags torchpc[,cuda] ./...
# Falls back to Debian's split layout (/usr/include) when the wheel has no
# include/ATen.
set -euo pipefail
dir=${1:?usage: gen-torch-pc.sh DIR}
PYTHON=${PYTHON:-python3}
mkdir -p "$dir"
read -r T abi < <("$PYTHON" -c 'import os,torch;print(os.path.dirname(torch.__file__), int(torch._C._GLIBCXX_USE_CXX11_ABI))')
if [[ -d $T/include/ATen ]]; then
	inc="-isystem $T/include -isystem $T/include/torch/csrc/api/include"
else
	inc="-isystem /usr/include/torch/csrc/api/include"
fi
libdir=$T/lib
[[ -e $libdir/libtorch.so ]] || libdir=/usr/lib/x86_64-linux-gnu
# The shim's at::parallel_for is inlined OpenMP (ATen/ParallelOpenMP.h): link
# the OpenMP runtime libtorch itself uses (a pip wheel bundles its own
# libgomp-<hash>.so.1; two runtimes in one process would oversubscribe).
gomp=$(ls "$libdir"/libgomp-*.so* 2>/dev/null | head -n1 || true)
omp=${gomp:--fopenmp}
cat >"$dir/ragen-torch.pc" <<PC
Name: ragen-torch
Description: libtorch for ragen (from $T)
Version: 1
Cflags: $inc -D_GLIBCXX_USE_CXX11_ABI=$abi
Libs: -L$libdir -Wl,-rpath,$libdir -ltorch -ltorch_cpu -lc10 $omp
PC
echo "gen-torch-pc: wrote $dir/ragen-torch.pc" >&2
