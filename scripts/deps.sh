#!/usr/bin/env bash
# Installs the Debian packages given as arguments when any is missing, and
# makes the OpenMP OpenBLAS the active BLAS (the reference BLAS is 30x slower,
# and the pthread OpenBLAS fights libtorch's OpenMP pool).
set -euo pipefail
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 && -n ${RAGEN_DEPS_OPTIONAL:-} ]]; then
		# optional packages (the browser tests' Chromium): their tests skip
		echo "ragen: not installing optional packages ${missing[*]} (not root; the tests that need them skip)" >&2
		exit 0
	fi
	if [[ $(id -u) -ne 0 ]]; then
		echo "ragen: missing Debian packages: ${missing[*]}" >&2
		echo "ragen: run as root, or: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
	echo "ragen: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
openmp=/usr/lib/x86_64-linux-gnu/openblas-openmp
if [[ -e $openmp/libblas.so.3 && $(id -u) -eq 0 ]]; then
	cur=$(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || true)
	if [[ $cur != "$openmp/libblas.so.3" ]]; then
		update-alternatives --set libblas.so.3-x86_64-linux-gnu $openmp/libblas.so.3 >/dev/null
		update-alternatives --set liblapack.so.3-x86_64-linux-gnu $openmp/liblapack.so.3 >/dev/null
	fi
fi
