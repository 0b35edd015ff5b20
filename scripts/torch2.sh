#!/usr/bin/env bash
# The libtorch 2.x configuration: Debian trixie's libtorch-dev, libgloo-dev
# and python3-torch (2.6) in a debootstrap chroot, built from Debian packages
# only and cached between runs; the host's Go toolchain, module cache and the
# checkout are bind-mounted into it, in a private mount namespace (nothing
# stays mounted when a command ends). The host stays on bookworm (1.13).
#
# usage: scripts/torch2.sh setup          create or check the chroot
#        scripts/torch2.sh run CMD...     run CMD in the checkout, inside it
#        scripts/torch2.sh check-shims    compile every shim file against the
#                                         2.x headers with trixie's g++ (make test)
#        scripts/torch2.sh path           print the chroot's folder
#
# RAGEN_TORCH2_ROOT    the chroot (default /var/cache/ragen/torch2-trixie)
# RAGEN_DEBIAN_MIRROR  the Debian mirror (default: the host's, from apt's sources)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ROOT=${RAGEN_TORCH2_ROOT:-/var/cache/ragen/torch2-trixie}
SUITE=trixie
# What the chroot holds; a change here rebuilds it (the stamp records the list).
PKGS="libtorch-dev libgloo-dev python3-torch python3-numpy python3-yaml g++ make libopenblas0-openmp pkg-config ca-certificates xz-utils"
STAMP="$ROOT/.ragen-torch2"

die() { echo "torch2: $*" >&2; exit 1; }

mirror() {
	if [[ -n ${RAGEN_DEBIAN_MIRROR:-} ]]; then echo "$RAGEN_DEBIAN_MIRROR"; return; fi
	local m
	m=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		grep -v security | grep -oE 'https?://[^ ]+/debian/?' | head -n1 || true)
	echo "${m:-http://deb.debian.org/debian}"
}

ready() { [[ -f $STAMP && $(cat "$STAMP") == "$PKGS" ]]; }

# in_root CMD...: CMD inside the chroot, with /proc, /dev, /sys, the Go
# toolchain, the module cache and the checkout mounted, in a mount namespace
# of its own (the mounts vanish with it).
in_root() {
	local goroot modcache gocache
	goroot=$(go env GOROOT 2>/dev/null || echo /usr/local/go)
	modcache=$(go env GOMODCACHE 2>/dev/null || echo /root/go/pkg/mod)
	gocache=$ROOT/var/cache/go-build
	mkdir -p "$modcache" "$gocache" "$ROOT$goroot" "$ROOT$modcache" "$ROOT$repo" "$ROOT/proc" "$ROOT/dev" "$ROOT/sys"
	local shared=$repo/../shared
	local mshared=""
	if [[ -d $shared ]]; then
		shared=$(cd "$shared" && pwd)
		mkdir -p "$ROOT$shared"
		mshared="mount --bind '$shared' '$ROOT$shared';"
	fi
	# a git worktree's .git is a file naming the main repository's folder
	local mgit=""
	if [[ -f $repo/.git ]]; then
		local gd
		gd=$(git -C "$repo" rev-parse --git-common-dir 2>/dev/null || true)
		if [[ -n $gd && -d $gd ]]; then
			gd=$(cd "$gd" && pwd)
			mkdir -p "$ROOT$gd"
			mgit="mount --bind '$gd' '$ROOT$gd';"
		fi
	fi
	cp -f /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
	local env=(HOME=/root PATH="$goroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		GOROOT="$goroot" GOMODCACHE="$modcache" GOCACHE=/var/cache/go-build GOTOOLCHAIN=local
		GOFLAGS="${GOFLAGS:-}" GOPROXY="$(go env GOPROXY 2>/dev/null || echo off)" GONOSUMDB="${GONOSUMDB:-}"
		GOSUMDB="$(go env GOSUMDB 2>/dev/null || echo off)" LANG=C.UTF-8 TERM="${TERM:-dumb}"
		RAGEN_TORCH2=1 CI="${CI:-}")
	for v in RAGEN_TEST_DEVICE TESTFLAGS OMP_NUM_THREADS NT RAGEN_BENCH_QWEN; do
		[[ -n ${!v:-} ]] && env+=("$v=${!v}")
	done
	local cmd
	printf -v cmd '%q ' "$@"
	unshare --mount --propagation private -- bash -c "
		set -e
		mount -t proc proc '$ROOT/proc'
		mount --rbind /dev '$ROOT/dev'
		mount --rbind /sys '$ROOT/sys'
		mount --bind '$goroot' '$ROOT$goroot'
		mount --bind '$modcache' '$ROOT$modcache'
		mount --bind '$repo' '$ROOT$repo'
		$mshared $mgit
		exec chroot '$ROOT' /usr/bin/env -i ${env[*]@Q} bash -c 'cd \"\$1\"; shift; exec \"\$@\"' _ '$PWD' $cmd
	"
}

setup() {
	[[ $(id -u) -eq 0 ]] || die "setup needs root (debootstrap, chroot and mounts); run as root or sudo"
	ready && return 0
	mkdir -p "$(dirname "$ROOT")"
	exec 9>"$ROOT.lock"
	flock 9
	ready && return 0
	"$here/deps.sh" debootstrap
	local m t0=$SECONDS
	m=$(mirror)
	if [[ ! -x $ROOT/usr/bin/apt-get ]]; then
		echo "torch2: debootstrap $SUITE from $m into $ROOT (once; about 30 s)" >&2
		rm -rf "$ROOT.tmp"
		mkdir -p "$(dirname "$ROOT")"
		debootstrap --variant=minbase "$SUITE" "$ROOT.tmp" "$m" >"$ROOT.debootstrap.log" 2>&1 ||
			die "debootstrap failed (log: $ROOT.debootstrap.log)"
		rm -rf "$ROOT"
		mv "$ROOT.tmp" "$ROOT"
	fi
	echo "torch2: installing $PKGS in $ROOT (once; about a minute)" >&2
	in_root bash -c "export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null &&
		apt-get install -y -q --no-install-recommends $PKGS >/dev/null &&
		o=/usr/lib/x86_64-linux-gnu/openblas-openmp &&
		update-alternatives --set libblas.so.3-x86_64-linux-gnu \$o/libblas.so.3 >/dev/null &&
		update-alternatives --set liblapack.so.3-x86_64-linux-gnu \$o/liblapack.so.3 >/dev/null &&
		apt-get clean" || die "installing $PKGS in the chroot failed"
	echo "$PKGS" >"$STAMP"
	echo "torch2: ready in $((SECONDS - t0)) s: $(in_root python3 -c 'import torch; print("PyTorch", torch.__version__)' 2>/dev/null), $(in_root g++ --version | head -n1)" >&2
}

# check_shims: every shim .cc (tensor and c10d) compiled, one g++ per file in
# parallel, with the flags cgo uses, against trixie's libtorch 2.x headers and
# g++: a change that breaks the 2.x build fails here. At -O0 (fast) GCC
# still inlines always_inline functions, and reports where it cannot (a
# target attribute mismatch), which -fsyntax-only never does.
check_shims() {
	if [[ $(id -u) -ne 0 && -z ${CI:-} ]]; then
		echo "torch2: check-shims skipped: the libtorch 2.x chroot needs root (CI runs it)" >&2
		return 0
	fi
	setup
	in_root bash -c '
		set -u
		fl="-std=c++17 -O0 -g0 -fPIC -fopenmp -Wno-deprecated-declarations -c -o /dev/null"
		pids=(); names=()
		for f in internal/torch/csrc/*.cc internal/dist/csrc/*.cc; do
			g++ $fl "$f" 2>"/tmp/check-$(basename "$f").log" & pids+=($!); names+=("$f")
		done
		rc=0
		for i in "${!pids[@]}"; do
			if wait "${pids[$i]}"; then echo "torch2: ${names[$i]}: ok"; else
				echo "torch2: ${names[$i]}: FAILED against libtorch 2.x:"; head -n 40 "/tmp/check-$(basename "${names[$i]}").log"; rc=1; fi
		done
		exit $rc
	'
}

case ${1:-} in
setup) setup ;;
path) echo "$ROOT" ;;
run)
	shift
	[[ $# -gt 0 ]] || die "usage: torch2.sh run CMD..."
	setup
	(cd "$repo" && go mod download)
	in_root "$@"
	;;
check-shims) check_shims ;;
*) die "usage: torch2.sh setup | run CMD... | check-shims | path" ;;
esac
