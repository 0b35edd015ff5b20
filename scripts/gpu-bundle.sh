#!/usr/bin/env bash
# make gpu-bundle: packs what a GPU machine without a Go toolchain needs to
# run ragen's CUDA checks into .gpu-bundle/ (and .gpu-bundle.tar.gz):
#   - test and benchmark binaries built here with -tags torchshared (they
#     link libragen_torch.so instead of compiling the shim in),
#   - the shim source and scripts/build-shim.sh,
#   - each package's testdata,
#   - gpu-check.sh, which rebuilds libragen_torch.so against the machine's
#     PyTorch (CUDA enabled when that torch has CUDA) and runs the checks
#     with RAGEN_TEST_DEVICE=cuda.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
b=$root/.gpu-bundle
rm -rf "$b" "$root/.gpu-bundle.tar.gz"
mkdir -p "$b/lib" "$b/csrc" "$b/pkg"
TORCH=system "$root/scripts/build-shim.sh" "$b/lib" "$root/internal/torch/csrc"
cp "$root"/internal/torch/csrc/*.cc "$root"/internal/torch/csrc/*.h "$root"/internal/torch/csrc/*.hpp "$b/csrc/"
cp "$root/scripts/build-shim.sh" "$b/"
# c10d (package dist): libragen_dist.so from internal/dist/csrc, laid out as
# in the tree so that its ../../torch/csrc include resolves; NCCL is compiled
# in when the torch build-shim.sh finds has CUDA.
mkdir -p "$b/src/internal/torch/csrc" "$b/src/internal/dist/csrc"
cp "$root/internal/torch/csrc/tensor_impl.hpp" "$b/src/internal/torch/csrc/"
cp "$root"/internal/dist/csrc/*.cc "$root"/internal/dist/csrc/*.h "$root"/internal/dist/csrc/*.hpp "$b/src/internal/dist/csrc/"
TORCH=system "$root/scripts/build-shim.sh" "$b/lib/dist" "$b/src/internal/dist/csrc"
mv "$b/lib/dist/libragen_torch.so" "$b/lib/libragen_dist.so" && rmdir "$b/lib/dist"
cd "$root"
pkgs=$(go list -f '{{if .TestGoFiles}}{{.ImportPath}} {{join .Deps " "}}{{end}}' ./... | grep 'ragen/internal/torch' | cut -d' ' -f1 || true)
pkgs="$pkgs $(go list ./torch)"
for p in $(tr ' ' '\n' <<<"$pkgs" | sort -u); do
	rel=${p#ragen/}
	[[ $rel == ragen ]] && rel=.
	name=$(tr '/' '_' <<<"$rel")
	mkdir -p "$b/pkg/$name"
	CGO_LDFLAGS="-L$b/lib" go test -c -tags torchshared -ldflags=-s -o "$b/pkg/$name/test" "./$rel"
	[[ -d $rel/testdata ]] && cp -r "$rel/testdata" "$b/pkg/$name/"
	echo "gpu-bundle: $p" >&2
done
CGO_LDFLAGS="-L$b/lib" go build -tags torchshared -ldflags=-s -o "$b/benchall" ./bench/cmd/benchall
cp bench/*.py "$b/" 2>/dev/null || true
cat >"$b/gpu-check.sh" <<'RUN'
#!/usr/bin/env bash
# Rebuilds the shim against this machine's PyTorch and runs the checks on CUDA.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3} "$here/build-shim.sh" "$here/lib" "$here/csrc" || exit 1
# dist (c10d, NCCL with a CUDA torch); its NCCL check is dist's TestNCCL below
PYTHON=${PYTHON:-python3} "$here/build-shim.sh" "$here/lib/dist" "$here/src/internal/dist/csrc" || exit 1
mv "$here/lib/dist/libragen_torch.so" "$here/lib/libragen_dist.so"
export LD_LIBRARY_PATH=$here/lib:$("${PYTHON:-python3}" -c 'import os,torch;print(os.path.dirname(torch.__file__)+"/lib")' 2>/dev/null)
export RAGEN_TEST_DEVICE=${RAGEN_TEST_DEVICE:-cuda}
rc=0
for d in "$here"/pkg/*/; do
	echo "== $(basename "$d")"
	(cd "$d" && ./test -test.timeout 300s ${TESTFLAGS:-}) || rc=1
done
"$here/benchall" -dir "$here" || rc=1
exit $rc
RUN
chmod +x "$b/gpu-check.sh"
tar -C "$root" -czf "$root/.gpu-bundle.tar.gz" .gpu-bundle
du -sh "$b" "$root/.gpu-bundle.tar.gz"
