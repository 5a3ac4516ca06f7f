#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# DPIB_EXIT_COUNTERS: a program's device counters, written at its exit.
# Runs a test program that sends zero-copy and copied frames on the
# loopback device and checks the lines it left: "device counter value",
# none of them zero, the traffic it made among them.
set -euo pipefail
prog=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

DPIB_CONF= DPIB_EXIT_COUNTERS="$tmp/c" "$prog" >/dev/null
cat "$tmp/c"
fail() { echo "FAIL: $*"; exit 1; }
[ -s "$tmp/c" ] || fail "nothing written"
awk 'NF != 3 || $1 != "dpib0" || $3 !~ /^[1-9][0-9]*$/ { bad = 1 }
     END { exit bad }' "$tmp/c" || fail "a line is not 'dpib0 NAME N' with N > 0"
for c in tx_packets rx_packets tx_zero_copy_packets ack_sent; do
	grep -q "^dpib0 $c [1-9]" "$tmp/c" || fail "no $c"
done
# Appended, not overwritten: a second run adds its own lines.
n=$(wc -l <"$tmp/c")
first=$(cat "$tmp/c")
DPIB_CONF= DPIB_EXIT_COUNTERS="$tmp/c" "$prog" >/dev/null
[ "$(wc -l <"$tmp/c")" -gt "$n" ] && head -n "$n" "$tmp/c" | cmp -s - <(printf "%s\n" "$first") || fail "second run not appended"
echo "ok"
