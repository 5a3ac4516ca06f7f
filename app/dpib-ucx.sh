#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib-ucx.sh [BUILD] [REPS] [MTU]: UCX on dpib beside UCX on the kernel's
# TCP, over the same link: two network namespaces joined by a veth pair
# (MTU 9000 by default), Debian's ucx_perftest in each, medians of REPS
# runs (3). Rows: UCP tag matching, put, get, stream and active messages
# (UCX_TLS=rc_verbs,ud_verbs on dpib0 against UCX_TLS=tcp on the veth),
# and UCT active messages (rc_verbs against tcp). Latencies in µs (the
# median of the run), bandwidths in MB/s; "dpib/tcp" is the speed-up (for
# latency, tcp's time over dpib's). Root only (namespaces).
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
reps=${2:-3}
mtu=${3:-9000}
run=$build/app/dpib-run
# shellcheck source=tests/two_hosts.sh
. "$top/tests/two_hosts.sh"
[ "$(id -u)" = 0 ] || { echo "dpib-ucx.sh: needs root (namespaces)" >&2; exit 1; }
command -v ucx_perftest >/dev/null ||
	{ echo "dpib-ucx.sh: no ucx_perftest (apt-get install ucx-utils)" >&2; exit 1; }

na=dpib-ux-a nb=dpib-ux-b
tmp=$(mktemp -d)
trap 'ip netns del $na 2>/dev/null; ip netns del $nb 2>/dev/null; rm -rf "$tmp"' EXIT
# The same interface name at both ends: UCT's tcp transport takes it as
# its device name, one argument for both programs.
veth_pair "$na" uxveth "$nb" uxveth "$mtu" noipv6 >/dev/null || exit 1
for s in a b; do
	sed "s/^mtu = .*/mtu = $mtu/; s/iface=veth-$s/iface=uxveth/" \
		"$top/config/af_packet-$s.conf" >"$tmp/$s.conf"
done

# one KIND "ENV" ARGS...: one run; prints the median latency (µs) and the
# average bandwidth (MB/s) of its Final line, or nothing.
one() {
	local kind=$1 env=$2 pid
	shift 2
	if [ "$kind" = dpib ]; then
		# shellcheck disable=SC2086
		ip netns exec "$na" env $env timeout 60 "$run" -c "$tmp/a.conf" \
			ucx_perftest -p 13400 "$@" >/dev/null 2>&1 &
		pid=$!
		sleep 1
		# shellcheck disable=SC2086
		ip netns exec "$nb" env $env timeout 60 "$run" -c "$tmp/b.conf" \
			ucx_perftest -p 13400 "$@" 192.0.2.1 >"$tmp/c" 2>&1
	else
		# shellcheck disable=SC2086
		ip netns exec "$na" env $env timeout 60 \
			ucx_perftest -p 13400 "$@" >/dev/null 2>&1 &
		pid=$!
		sleep 1
		# shellcheck disable=SC2086
		ip netns exec "$nb" env $env timeout 60 \
			ucx_perftest -p 13400 "$@" 192.0.2.1 >"$tmp/c" 2>&1
	fi
	wait "$pid"
	awk '/^Final:/ { print $3, $6 }' "$tmp/c"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# row NAME lat|bw "DPIB ENV/ARGS" "TCP ENV/ARGS" ARGS...
row() {
	local name=$1 what=$2 denv=$3 tenv=$4 i d t dv tv ratio
	shift 4
	: >"$tmp/d"; : >"$tmp/t"
	for ((i = 0; i < reps; i++)); do
		# shellcheck disable=SC2086
		one dpib "UCX_NET_DEVICES=dpib0:1 ${denv%%|*}" ${denv#*|} "$@" >>"$tmp/d"
		# shellcheck disable=SC2086
		one tcp "UCX_NET_DEVICES=uxveth ${tenv%%|*}" ${tenv#*|} "$@" >>"$tmp/t"
	done
	if [ "$what" = lat ]; then
		dv=$(awk '{ print $1 }' "$tmp/d" | median)
		tv=$(awk '{ print $1 }' "$tmp/t" | median)
		ratio=$(awk -v d="${dv:-0}" -v t="${tv:-0}" 'BEGIN { if (d > 0 && t > 0) printf "%.2f", t / d; else print "-" }')
	else
		dv=$(awk '{ print $2 }' "$tmp/d" | median)
		tv=$(awk '{ print $2 }' "$tmp/t" | median)
		ratio=$(awk -v d="${dv:-0}" -v t="${tv:-0}" 'BEGIN { if (d > 0 && t > 0) printf "%.2f", d / t; else print "-" }')
	fi
	printf "%-34s %-8s %12s %12s %9s\n" "$name" "$what" "${dv:-fail}" "${tv:-fail}" "$ratio"
}

ucp="UCX_TLS=rc_verbs,ud_verbs|"
tcp="UCX_TLS=tcp|"
echo "UCX $(ucx_info -v | awk '/Version/ { print $3 }') on dpib (af_packet, veth MTU $mtu) and on TCP over the same veth;"
echo "medians of $reps runs; $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
printf "%-34s %-8s %12s %12s %9s\n" "test" "figure" "dpib" "tcp" "dpib/tcp"
row "UCP tag_lat 8 B (us)" lat "$ucp" "$tcp" -t tag_lat -s 8 -n 10000
row "UCP tag_bw 64 KiB (MB/s)" bw "$ucp" "$tcp" -t tag_bw -s 65536 -n 2000
row "UCP ucp_put_bw 64 KiB (MB/s)" bw "$ucp" "$tcp" -t ucp_put_bw -s 65536 -n 2000
row "UCP ucp_get 64 KiB (MB/s)" bw "$ucp" "$tcp" -t ucp_get -s 65536 -n 2000
row "UCP stream_bw 64 KiB (MB/s)" bw "$ucp" "$tcp" -t stream_bw -s 65536 -n 2000
row "UCP ucp_am_lat 8 B (us)" lat "$ucp" "$tcp" -t ucp_am_lat -s 8 -n 10000
row "UCT am_lat 8 B (us)" lat "|-x rc_verbs -d dpib0:1" "|-x tcp -d uxveth" -t am_lat -s 8 -n 10000
row "UCT am_bw 4 KiB bcopy (MB/s)" bw "|-x rc_verbs -d dpib0:1" "|-x tcp -d uxveth" -t am_bw -s 4096 -D bcopy -n 20000
