#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Debian's qperf, unmodified, between two processes over memif: its RC
# tests through the RDMA CM (-cm1; qperf's UC and UD tests address by LID
# without a GRH, which no RoCE device takes, rxe included). qperf's server
# forks a process per test: each test's server is a new dpib process, so
# the client's memif device must reconnect to each new server (as a RoCE
# port comes back with its peer), and its latency tests end their event
# loops on the SIGALRM that stops each test (ibv_get_cq_event returns
# EINTR, as the kernel's read() does). Both programs run in a network
# namespace of their own whose loopback carries the server's RoCE address
# (qperf reaches its server over TCP at the address it resolves with the
# CM). Each engine mode; every run has a time limit. A run passes when the
# client exits 0 and prints a result for every test.
#
# Usage: qperf.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
run="$build/app/dpib-run"
tmp=$(mktemp -d /tmp/dpib-qperf.XXXXXX)
. "$(dirname "$0")/two_hosts.sh"
NS=dpib-qperf-$$
N="ip netns exec $NS"
TESTS="rc_bw rc_bi_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat
rc_rdma_write_bw rc_rdma_write_lat rc_compare_swap_mr rc_fetch_add_mr
ver_rc_compare_swap ver_rc_fetch_add"

cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! command -v qperf >/dev/null; then
	echo "FAIL - qperf is not installed (app/dpib-quickstart.sh installs it)"
	exit 1
fi
ip netns add "$NS" || exit 1
ip -n "$NS" link set lo up
ip -n "$NS" addr add 192.0.2.1/32 dev lo

for mode in inline adaptive; do
	m="net_memif0,socket=$tmp/memif.sock,socket-abstract=no"
	printf '[engine]\nmode = %s\n[device dpib0]\nport = %s\nip = %s\n' \
		"$mode" "$m,role=server" 192.0.2.1 >"$tmp/s.conf"
	printf '[engine]\nmode = %s\n[device dpib0]\nport = %s\nip = %s\n' \
		"$mode" "$m,role=client" 192.0.2.2 >"$tmp/c.conf"
	printf 'mtu = 9000\nlink_wait_ms = 20000\n' |
		tee -a "$tmp/s.conf" >>"$tmp/c.conf"
	rm -f "$tmp/memif.sock"
	# The server serves until stopped.
	$N timeout 300 "$run" -c "$tmp/s.conf" qperf >"$tmp/server.log" 2>&1 &
	srv=$!
	sleep 0.5
	# shellcheck disable=SC2086
	$N timeout 200 "$run" -c "$tmp/c.conf" qperf 192.0.2.1 -cm1 -t 1 \
		$TESTS >"$tmp/client.log" 2>&1
	rc=$?
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	srv=
	missing=""
	for t in $TESTS; do
		grep -A1 "^$t:\$" "$tmp/client.log" | tail -1 |
			grep -Eq '^ +[a-z_]+ += +[0-9.]+ ' || missing="$missing $t"
	done
	if [ $rc -eq 0 ] && [ -z "$missing" ]; then
		ok "memif $mode: qperf -cm1$(grep -A1 -E '^rc_(lat|bw):$' \
			"$tmp/client.log" | grep '=' | tr -s ' ' |
			paste -sd',')"
	else
		fail "memif $mode: qperf (client rc $rc; no result:$missing)"
		sed 's/^/  client: /' "$tmp/client.log" | tail -30
		sed 's/^/  server: /' "$tmp/server.log" | tail -10
		crash_stack client "$tmp/client.log"
		crash_stack server "$tmp/server.log"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
