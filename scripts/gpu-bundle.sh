#!/usr/bin/env bash
# make gpu-bundle: packs what a GPU machine without a Go toolchain needs to
# run ragen's CUDA check into one file, .gpu-bundle.tar.xz (at most 40 MiB,
# checked here):
#   - the test binaries of torch, llm, dist and starpo, the ragen CLI and
#     gpubench, built here with -tags torchshared (they link
#     libragen_torch.so and libragen_dist.so instead of compiling the shims
#     in) and stripped;
#   - the shim sources, scripts/build-shim.sh, the testdata the tests read,
#     bench/gpu_peer.py (Hugging Face transformers peer) and qwen_peer.py;
#   - gpu-check.sh, which builds the shims against that machine's PyTorch
#     (one compiler process per file, all cores; CUDA when that torch has
#     it) and runs the check (see it for the steps).
# Unpacked and run here in the libtorch 2.x chroot (make gpu-check-cpu), the
# same bundle proves the check end to end on a CPU: the CUDA-only steps
# report themselves as skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
b=$root/.gpu-bundle
out=$root/.gpu-bundle.tar.xz
limit=$((40 << 20))
rm -rf "$b" "$out"
mkdir -p "$b/src/internal/torch/csrc" "$b/src/internal/dist/csrc" "$b/pkg" "$b/bin" "$b/bench" "$b/lib"
cp "$root"/internal/torch/csrc/*.{cc,h,hpp} "$b/src/internal/torch/csrc/"
cp "$root"/internal/dist/csrc/*.{cc,h,hpp} "$b/src/internal/dist/csrc/"
cp "$root/scripts/build-shim.sh" "$root/scripts/gpu-check.sh" "$b/"
chmod +x "$b/build-shim.sh" "$b/gpu-check.sh"
cp "$root/bench/gpu_peer.py" "$root/bench/qwen_peer.py" "$b/bench/"
# Gloo's headers (BSD licence): PyTorch's wheels ship ProcessGroupGloo.hpp
# but not the gloo headers it includes, so the dist library's gloo group
# would be missing there. Debian's libgloo-dev gives them: trixie's (the
# libtorch 2.x chroot, the newer) when it is there, else this machine's.
# gpu-check.sh uses them only where the torch has none, and builds without
# gloo if they do not fit that torch.
groot=$("$root/scripts/torch2.sh" path 2>/dev/null || true)
gsrc=/usr/include/gloo gdoc=/usr/share/doc/libgloo-dev/copyright
if [[ -n $groot && -f $groot/usr/include/gloo/config.h ]]; then gsrc=$groot/usr/include/gloo gdoc=$groot$gdoc; fi
if [[ -f $gsrc/config.h ]]; then
	mkdir -p "$b/gloo-include"
	cp -r "$gsrc" "$b/gloo-include/gloo"
	[[ -f $gdoc ]] && cp "$gdoc" "$b/gloo-include/COPYRIGHT"
else
	echo "gpu-bundle: no gloo headers (libgloo-dev): a GPU machine's wheel torch will build the dist library without gloo" >&2
fi

# libraries to link against here (Debian's libtorch); gpu-check.sh rebuilds
# both against the GPU machine's PyTorch, so they do not travel. Kept in
# .gpu-bundle-lib/ and rebuilt when a shim source changes.
lib=$root/.gpu-bundle-lib
sum=$(cat "$root"/internal/torch/csrc/*.{cc,h,hpp} "$root"/internal/dist/csrc/*.{cc,h,hpp} "$root/scripts/build-shim.sh" | sha256sum | cut -c1-16)
if [[ $(cat "$lib/SUM" 2>/dev/null) != "$sum" ]]; then
	rm -rf "$lib" && mkdir -p "$lib"
	TORCH=system "$root/scripts/build-shim.sh" "$lib" "$root/internal/torch/csrc"
	TORCH=system LIBNAME=libragen_dist.so "$root/scripts/build-shim.sh" "$lib" "$root/internal/dist/csrc"
	echo "$sum" >"$lib/SUM"
fi

cd "$root"
export CGO_LDFLAGS="-L$lib"
gof=(-tags torchshared -trimpath -ldflags=-s\ -w)
for p in torch llm dist starpo; do
	mkdir -p "$b/pkg/$p"
	go test -c "${gof[@]}" -o "$b/pkg/$p/test" "./$p"
	[[ -d $p/testdata ]] && cp -r "$p/testdata" "$b/pkg/$p/"
	echo "gpu-bundle: $p test binary" >&2
done
go build "${gof[@]}" -o "$b/bin/ragen" ./cmd/ragen
go build "${gof[@]}" -o "$b/bin/gpubench" ./bench/cmd/gpubench
git rev-parse --short HEAD >"$b/COMMIT" 2>/dev/null || echo unknown >"$b/COMMIT"

tar -C "$root" -cf - .gpu-bundle | xz -T0 -6 >"$out"
size=$(stat -c %s "$out")
du -sh "$b" >&2
echo "gpu-bundle: wrote $out ($((size >> 20)) MiB of at most $((limit >> 20)) MiB)" >&2
if ((size > limit)); then
	echo "gpu-bundle: $out is $size bytes, over the $limit-byte limit (40 MiB): the GPU machine takes at most 64 MiB per call, checkout included" >&2
	exit 1
fi
