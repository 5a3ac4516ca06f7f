#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib quick start: install the build dependencies (Debian 12), build, and
# run either the main benchmark or every test suite.
#
#   bash app/dpib-quickstart.sh bench   # build + benchmark on the loopback device
#   bash app/dpib-quickstart.sh test    # build + all meson test suites
#   bash app/dpib-quickstart.sh deps    # dependencies only
#
# Root-only steps (apt-get, hugepages for the benchmark) run when this is
# root, or through sudo when it is available.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPIB_BUILD_DIR:-$top/build}
packages=(
	build-essential pkg-config meson ninja-build
	libdpdk-dev dpdk libibverbs-dev libisal-dev libpci-dev
	libhugetlbfs-bin iproute2 python3 ibverbs-utils perftest qperf python3-pyverbs
	clang libclang-rt-14-dev
	tshark python3-scapy
	qemu-system-x86 debootstrap e2fsprogs
	ucx-utils openmpi-bin libopenmpi-dev gdb
	librdmacm-dev rdmacm-utils infiniband-diags
)

as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		echo "dpib: '$*' needs root" >&2
		return 1
	fi
}

deps() {
	local missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		return 0
	fi
	echo "dpib: installing ${missing[*]}"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" "$top" --buildtype=release
	fi
	ninja -C "$build"
}

# Reserve 2 MiB hugepages for the benchmark and give them back afterwards.
huge_before=""
hugepages_up() {
	local nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	[ -w "$nr" ] || return 0
	huge_before=$(cat "$nr")
	if [ "$huge_before" -lt 512 ]; then
		echo 512 > "$nr" || true
	fi
	if ! grep -q " hugetlbfs " /proc/mounts; then
		mkdir -p /dev/hugepages
		mount -t hugetlbfs nodev /dev/hugepages && huge_mounted=1
	fi
}

hugepages_down() {
	local nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	if [ "${huge_mounted:-0}" = 1 ]; then
		umount /dev/hugepages || true
	fi
	if [ -n "$huge_before" ]; then
		echo "$huge_before" > "$nr" || true
	fi
}

bench() {
	if [ "$(id -u)" = 0 ]; then
		hugepages_up
		trap hugepages_down EXIT
	fi
	echo "dpib: machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	"$build/app/dpib-devinfo"
	"$build/app/dpib-perf" -S 8,64,512,4096,65536 -E 1,2 \
		-Q 2,16,256,1024,4096,16384 --plot "$build/dpib-perf-qps.svg" \
		--plot-sizes "$build/dpib-perf-sizes.svg" \
		--json "$build/dpib-perf.json" "$@"
	# The loopback leaves out the ICRC (its frames stay in memory); what
	# a wire's ICRC costs, as on every NIC port:
	echo
	echo "dpib: the base tables again with the ICRC computed (DPIB_ICRC=on)"
	DPIB_ICRC=on "$build/app/dpib-perf" "$@"
	# Two processes as two hosts (network namespaces: root only).
	if [ "$(id -u)" = 0 ]; then
		echo
		bash "$top/app/dpib-twohost.sh" "$build" "${DPIB_TWOHOST_REPS:-3}"
	else
		echo "dpib: the two-process table (app/dpib-twohost.sh) needs root"
	fi
}

# meson prints its own summary; CI reads a plain "N passed, N failed" line.
tests() {
	local rc=0
	# The soak suite (10 M operations under loss) runs on request only.
	meson test -C "$build" --print-errorlogs --num-processes 2 \
		--no-suite soak "$@" || rc=$?
	python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    counts[r] = counts.get(r, 0) + 1
passed = counts.get("OK", 0) + counts.get("EXPECTEDFAIL", 0)
failed = sum(v for k, v in counts.items() if k not in ("OK", "EXPECTEDFAIL", "SKIP"))
print(f"{passed} passed, {failed} failed, {counts.get('SKIP', 0)} skipped")
PY
	return $rc
}

cmd=${1:-bench}
shift || true
case "$cmd" in
deps) deps ;;
build) deps && build ;;
bench) deps && build && bench "$@" ;;
test) deps && build && tests "$@" ;;
*) echo "usage: $0 bench|test|build|deps" >&2; exit 2 ;;
esac
