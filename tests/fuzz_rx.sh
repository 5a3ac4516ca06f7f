#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Build and run the receive-path fuzzer (tests/fuzz_rx.c) with clang's
# libFuzzer, ASan and UBSan over the harness, the driver and the verbs
# library alike (all compiled here with clang; DPDK and ISA-L are the
# system's uninstrumented shared libraries).
#
#   fuzz_rx.sh SRCDIR BUILDDIR SHAREDDIR
#
# 1. every file in tests/fuzz_corpus/ is replayed once (regressions);
# 2. the fuzzer runs for DPIB_FUZZ_SECONDS (default 60) from the seeds:
#    the rxe vector captures and synthetic conversations the harness writes,
#    plus the corpus kept in BUILDDIR between runs.
# Exit 0 only when no regression input fails and the fuzzer used its time
# without finding a crash. A crash leaves the input under
# BUILDDIR/fuzz_rx/artifacts/ (emptied at each run); copy it into
# tests/fuzz_corpus/ under a name that says what it is. To see what an input
# does: DPIB_FUZZ_VERBOSE=1 BUILDDIR/fuzz_rx/fuzz_rx -runs=1 FILE, with
# DPIB_CONF=BUILDDIR/fuzz_rx/fuzz.conf.
#
# Environment: CLANG (compiler, default clang), DPIB_FUZZ_SECONDS,
# DPIB_FUZZ_ARGS (more libFuzzer options), DPIB_FUZZ_JOBS (compile jobs).
set -euo pipefail

src=$(cd "$1" && pwd)
build=$2
shared=$3
clang=${CLANG:-clang}
seconds=${DPIB_FUZZ_SECONDS:-60}
work=$build/fuzz_rx
bin=$work/fuzz_rx

die() {
	echo "fuzz_rx: $*" >&2
	exit 1
}

# No clang is a failure, not a skip: CI installs it (app/dpib-quickstart.sh).
command -v "$clang" >/dev/null 2>&1 ||
	die "clang not found (CLANG=$clang): install clang and libclang-rt-14-dev"
mkdir -p "$work/obj" "$work/artifacts" "$work/corpus"
rm -f "$work"/artifacts/*
printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }\n' \
	> "$work/probe.c"
"$clang" -fsanitize=fuzzer,address,undefined "$work/probe.c" \
	-o "$work/probe" 2>"$work/probe.log" ||
	die "$clang cannot link -fsanitize=fuzzer (libclang-rt-14-dev missing?): $(cat "$work/probe.log")"

# ---- build: every object is rebuilt when its source or any header changed.
# Alignment is left out: every header after the 14-byte Ethernet header is
# only 2-byte aligned, which x86 does not mind (see DPIB_FUZZ_ALIGNMENT).
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
[ -n "${DPIB_FUZZ_ALIGNMENT:-}" ] || sanitize="$sanitize -fno-sanitize=alignment"
cflags="-std=gnu11 -g -O1 -fno-omit-frame-pointer $sanitize
	-DALLOW_EXPERIMENTAL_API -D_GNU_SOURCE -march=native
	-Wno-unused-parameter -Wno-missing-field-initializers
	-I$src/drivers/net/ib -I$src/lib/verbs -I$src/tests
	$(pkg-config --cflags libdpdk)"
libs="$(pkg-config --libs libdpdk) -lrte_bus_vdev -lisal -lpthread"
cflags=$(tr -s ' \t\n' ' ' <<<"$cflags")
# shellcheck disable=SC2012
newest_header=$(ls -t "$src"/drivers/net/ib/*.h "$src"/lib/verbs/*.h \
	"$src"/tests/*.h | sed -n 1p)
if [ ! -f "$work/flags" ] || [ "$(cat "$work/flags")" != "$clang $cflags" ]; then
	rm -f "$work"/obj/*.o
	echo "$clang $cflags" > "$work/flags"
fi
compile() {	# source object extra-flags
	if [ ! -f "$2" ] || [ "$1" -nt "$2" ] || [ "$newest_header" -nt "$2" ]; then
		# shellcheck disable=SC2086
		"$clang" $cflags $3 -c "$1" -o "$2"
	fi
}
export -f compile
export clang cflags newest_header
objs=()
pairs=()
for f in "$src"/drivers/net/ib/*.c "$src"/lib/verbs/*.c; do
	objs+=("$work/obj/$(basename "$(dirname "$f")")_$(basename "$f" .c).o")
	pairs+=("$f" "${objs[-1]}")
done
# shellcheck disable=SC2016
printf '%s\n' "${pairs[@]}" |
	xargs -d '\n' -n 2 -P "${DPIB_FUZZ_JOBS:-$(nproc)}" \
	bash -c 'compile "$0" "$1" -fsanitize=fuzzer-no-link' ||
	die "compiling the driver with $clang failed"
compile "$src/tests/fuzz_rx.c" "$work/obj/fuzz_rx.o" -fsanitize=fuzzer ||
	die "compiling tests/fuzz_rx.c failed"
compile "$src/tests/fuzz_seeds.c" "$work/obj/fuzz_seeds.o" \
	-fsanitize=fuzzer-no-link || die "compiling tests/fuzz_seeds.c failed"
# shellcheck disable=SC2086
"$clang" -fsanitize=fuzzer $sanitize "$work/obj/fuzz_rx.o" \
	"$work/obj/fuzz_seeds.o" "${objs[@]}" \
	$libs -o "$bin" || die "linking fuzz_rx failed"

# ---- run: no hugepages, inline engine, EAL files removed after each run.
conf=$work/fuzz.conf
cat > "$conf" <<'EOF'
# SPDX-License-Identifier: BSD-3-Clause
# The embedded loopback device, without hugepages (written by fuzz_rx.sh).
[eal]
hugepages = no
memory = 256
args = --no-telemetry
[engine]
# No engine loop: every frame runs synchronously in dpib_inject().
takeover_us = never
[device dpib0]
port = net_ring_fuzz
ip = 127.0.0.1
ip6 = 2001:db8::1
mtu = 9000
loopback = yes
EOF
export DPIB_CONF=$conf DPIB_ENGINE_MODE=inline DPIB_SHARED=$shared
unset DPIB_FAULTS DPIB_CAPTURE
# LSan at exit would report DPDK's and the device's process-lifetime
# allocations; leaks that matter here are mbufs, which the harness counts.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

eal_dirs() {	# pid: where EAL 22.11 puts the runtime directory of a process
	local d
	for d in "${XDG_RUNTIME_DIR:-}" /var/run /tmp; do
		[ -n "$d" ] && echo "$d/dpdk/dpib_$1"
	done
}

run() {	# libFuzzer arguments...; returns its status, cleans EAL's files
	local status=0 pid d
	"$bin" "$@" &
	pid=$!
	wait "$pid" || status=$?
	# A crash exits without dpib's exit handler.
	for d in $(eal_dirs "$pid"); do
		if [ -d "$d" ]; then
			rm -rf "$d"
			rmdir "$(dirname "$d")" 2>/dev/null || true
		fi
	done
	return "$status"
}

failed=()
for f in "$src"/tests/fuzz_corpus/*; do
	[ -f "$f" ] || continue
	case $(basename "$f") in README*) continue ;; esac
	echo "fuzz_rx: regression $(basename "$f")"
	run -runs=1 -timeout=25 "$f" >"$work/replay.log" 2>&1 || {
		cat "$work/replay.log" >&2
		failed+=("$(basename "$f")")
	}
done

rm -rf "$work/seeds"
mkdir -p "$work/seeds"
DPIB_FUZZ_SEED_DIR=$work/seeds run 2>/dev/null || die "writing seeds failed"
echo "fuzz_rx: $(find "$work/seeds" -type f | wc -l) seeds;" \
	"fuzzing for ${seconds}s"

status=0
# shellcheck disable=SC2086
run -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=4500 \
	-timeout=25 -print_final_stats=1 -use_value_profile=1 \
	-artifact_prefix="$work/artifacts/" ${DPIB_FUZZ_ARGS:-} \
	"$work/corpus" "$work/seeds" || status=$?

if [ ${#failed[@]} -ne 0 ]; then
	echo "fuzz_rx: regression inputs failing: ${failed[*]}" >&2
	status=1
fi
if [ "$status" -ne 0 ]; then
	ls -l "$work/artifacts" >&2 || true
	echo "fuzz_rx: FAILED (crash inputs in $work/artifacts)" >&2
	exit 1
fi
echo "fuzz_rx: no crash in ${seconds}s"
