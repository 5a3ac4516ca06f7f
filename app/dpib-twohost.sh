#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Two processes as two hosts, the way users first measure an RDMA stack:
# unmodified perftest over dpib, beside the raw DPDK packet path between
# the same two ports (dpib-pktperf) in the same run. Links: a veth pair
# between two network namespaces (net_af_packet, MTU 9000: IB MTU 4096),
# created here and removed at exit, and net_memif. Engine mode: inline,
# the shipped two-process configurations' mode. Each figure is the median
# of REPS runs (default 5), each dpib run beside a raw one right before or
# after it; ratios are dpib over raw, the median of those pairs'. The SEND latency
# also goes beside the raw ping-pong with an ACK-sized frame behind each
# ping and echo, each side answering once both are in (dpib-pktperf -f
# 2): RC's own floor, since a responder's ACK is a frame of its own and
# perftest takes its send completion before it answers.
#
# Usage (root): dpib-twohost.sh BUILD_DIR [REPS]
set -u
build=$(cd "$1" && pwd)
reps=${2:-5}
run="$build/app/dpib-run"
pkt="$build/app/dpib-pktperf"
tmp=$(mktemp -d /tmp/dpib-twohost.XXXXXX)
. "$(dirname "$0")/../tests/two_hosts.sh"	# veth_pair
A="ip netns exec dpib-th-a"
B="ip netns exec dpib-th-b"

cleanup() {
	ip netns del dpib-th-a 2>/dev/null
	ip netns del dpib-th-b 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

setup() {
	veth_pair dpib-th-a dpib-ta dpib-th-b dpib-tb 9000 noipv6 || exit 1
	local m="net_memif0,socket=$tmp/memif.sock,socket-abstract=no"
	printf '[engine]\nmode = inline\n[device dpib0]\nport = %s\n%s\n%s\n' \
		net_af_packet0,iface=dpib-ta "ip = 192.0.2.11" "mtu = 9000" \
		>"$tmp/af-s.conf"
	printf '[engine]\nmode = inline\n[device dpib0]\nport = %s\n%s\n%s\n' \
		net_af_packet0,iface=dpib-tb "ip = 192.0.2.12" "mtu = 9000" \
		>"$tmp/af-c.conf"
	printf '[engine]\nmode = inline\n[device dpib0]\nport = %s\n%s\n%s\n' \
		"$m,role=server" "ip = 192.0.2.1" \
		"mtu = 9000"$'\n'"link_wait_ms = 20000" >"$tmp/memif-s.conf"
	printf '[engine]\nmode = inline\n[device dpib0]\nport = %s\n%s\n%s\n' \
		"$m,role=client" "ip = 192.0.2.2" \
		"mtu = 9000"$'\n'"link_wait_ms = 20000" >"$tmp/memif-c.conf"
}

# once LINK PROGRAM ARGS...: server then client; the client's output.
once() {
	local link=$1 spre="" cpre="" addr=127.0.0.1
	shift
	if [ "$link" = af ]; then
		spre=$A cpre=$B addr=192.0.2.1
	fi
	rm -f "$tmp/memif.sock"
	$spre timeout 60 "$run" -c "$tmp/$link-s.conf" "$@" >"$tmp/s.log" 2>&1 &
	sleep 0.5
	$cpre timeout 60 "$run" -c "$tmp/$link-c.conf" "$@" $addr 2>&1
	wait
}

# perftest's result row, field N (1-based) of the numbers.
pt_field() {
	grep -A1 '#bytes' | tail -1 | tr -s ' \t' ' ' | sed 's/^ //' |
		cut -d' ' -f"$1"
}

median() {
	grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 }
		END {
			if (NR == 0) print "-"
			else if (NR % 2) print v[(NR + 1) / 2]
			else print (v[NR / 2] + v[NR / 2 + 1]) / 2
		}'
}

# one_raw LINK FIELD ARGS...: one dpib-pktperf run, its JSON FIELD.
one_raw() {
	local link=$1 field=$2
	shift 2
	once "$link" "$pkt" "$@" --json | grep '^{' | python3 -c \
		"import json,sys; print(json.loads(sys.stdin.readline())['$field'])"
}

# one_pt LINK FIELD ARGS...: one perftest run, its result row's FIELD.
one_pt() {
	local link=$1 field=$2
	shift 2
	once "$link" "$@" | pt_field "$field"
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b == 0) print "-"
		else printf "%.2f", a / b
	}'
}

# row WHAT MULT RAWFIELD "RAWARGS" FIELD PROGRAM ARGS...: one table row of
# $link: REPS pairs of runs, the raw path's (dpib-pktperf RAWARGS, its
# RAWFIELD times MULT) and perftest's (its FIELD) back to back, raw first
# in odd pairs and dpib first in even ones; the medians of each side and
# of the pairs' own ratios (a machine whose speed drifts within minutes
# skews a ratio of two medians taken minutes apart).
row() {
	local what=$1 mult=$2 rf=$3 rargs=$4 field=$5 i d r ds="" rs="" qs=""
	shift 5
	for i in $(seq "$reps"); do
		if [ $((i % 2)) = 1 ]; then
			r=$(one_raw $link "$rf" $rargs)
			d=$(one_pt $link "$field" "$@")
		else
			d=$(one_pt $link "$field" "$@")
			r=$(one_raw $link "$rf" $rargs)
		fi
		r=$(awk -v a="$r" -v m="$mult" 'BEGIN {
			if (a ~ /^[0-9.]+$/) printf "%.4f", a * m; else print "-" }')
		ds="$ds$d\n" rs="$rs$r\n" qs="$qs$(ratio "$d" "$r")\n"
	done
	printf '%-8s %-34s %12s %12s %8s\n' "$name" "$what" \
		"$(printf "$ds" | median)" "$(printf "$rs" | median)" \
		"$(printf "$qs" | median)"
}

setup
echo "two processes, inline engines, medians of $reps runs (each dpib/raw" \
	"the median of pairs run back to back);" \
	"$(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-8s %-34s %12s %12s %8s\n' link figure dpib raw dpib/raw
for link in af memif; do
	name=$([ $link = af ] && echo veth || echo memif)
	# The rates are steady states, as the raw path's (2 s) are:
	# perftest's -D 2 times a window of a longer run, where a count of
	# messages (-n) at millions a second is over within the start-up's
	# first tens of milliseconds. The raw frames are the size of
	# dpib's (a 64 B WRITE's frame: Ethernet, IPv4, UDP, BTH, RETH, 64
	# payload bytes and the ICRC, 138 bytes), as dpib-perf's are on
	# the loopback device and the 64 KiB rows' are below: a 64-byte
	# raw frame moved half the cache lines a WRITE's frame does.
	for q in 1 64; do
		row "64 B WRITE -q $q (M msg/s)" 1 mpps "-t rate -s 138" \
			5 ib_write_bw -d dpib0 -x 0 -s 64 -q $q -D 2
	done
	# perftest halves the round trip of SEND and WRITE but not of READ
	# (one request, one response): READ goes beside a raw round trip.
	row "ib_send_lat -s 8 typical (us)" 1 typical_us \
		"-t lat -s 64 -n 5000" 5 ib_send_lat -d dpib0 -x 0 -s 8 -n 5000
	# The floor of an RC ping-pong: each side goes on once the answer
	# and the ACK of its own request are in, two frames each way.
	row "  vs raw, 2 frames each way (us)" 1 typical_us \
		"-t lat -s 64 -n 5000 -f 2" 5 ib_send_lat -d dpib0 -x 0 -s 8 \
		-n 5000
	row "ib_write_lat -s 8 typical (us)" 1 typical_us \
		"-t lat -s 64 -n 5000" 5 ib_write_lat -d dpib0 -x 0 -s 8 -n 5000
	row "ib_read_lat -s 8 typical (us, RTT)" 2 typical_us \
		"-t lat -s 64 -n 5000" 5 ib_read_lat -d dpib0 -x 0 -s 8 -n 5000
	for p in ib_write_bw ib_read_bw; do
		row "$p -s 64K (Gbit/s)" 1 gbps "-t rate -s 4200" \
			4 $p -d dpib0 -x 0 -s 65536 -D 2 --report_gbits
	done
done
