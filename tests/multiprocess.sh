#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Unmodified rdma-core programs (Debian's ibverbs-utils) on dpib, two
# processes as two hosts, over two kinds of link:
#   memif      net_memif server/client over a unix socket, then again with
#              VLAN 42 through the IPv6 GID (-g 1) and the IPv4 one
#   af_packet  net_af_packet on the two ends of a veth pair, each end in a
#              network namespace of its own (created here, removed at exit)
# Every run has a time limit; a run passes when both sides exit 0 and print
# their byte and iteration counts.
#
# Usage: multiprocess.sh BUILD_DIR SOURCE_DIR [memif|af_packet|all]
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
which=${3:-all}
run="$build/app/dpib-run"
tmp=$(mktemp -d /tmp/dpib-mp.XXXXXX)
. "$src/tests/two_hosts.sh"
T=60	# seconds per program

cleanup() {
	ip netns del dpib-mp-a 2>/dev/null
	ip netns del dpib-mp-b 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# check NAME LOG: a pingpong side's success lines.
side_ok() {
	grep -q "bytes in .* seconds" "$2" && grep -q "iters in .* seconds" "$2"
}

# run_two LABEL SERVER_PREFIX CLIENT_PREFIX SERVER_ADDR SERVER_CONF
#         CLIENT_CONF CHECK PROGRAM ARGS...: the server, then the client
# against SERVER_ADDR; it passes when both exit 0 and CHECK SERVER_LOG
# CLIENT_LOG prints the figure to report.
run_two() {
	local label=$1 spre=$2 cpre=$3 addr=$4 sconf=$5 cconf=$6 check=$7
	shift 7
	local s="$tmp/server.log" c="$tmp/client.log" srv rc src got
	rm -f "$tmp"/memif.sock
	$spre timeout $T "$run" -c "$sconf" "$@" >"$s" 2>&1 &
	srv=$!
	sleep 0.7
	$cpre timeout $T "$run" -c "$cconf" "$@" "$addr" >"$c" 2>&1
	rc=$?
	wait $srv
	src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && got=$($check "$s" "$c"); then
		ok "$label: $* ($got)"
	else
		fail "$label: $* (server rc $src, client rc $rc)"
		sed 's/^/  server: /' "$s" | tail -5
		sed 's/^/  client: /' "$c" | tail -5
		crash_stack server "$s"
		crash_stack client "$c"
	fi
}

# A pingpong's success lines on both sides; the client's time per iteration.
pingpong_ok() {
	side_ok server "$1" && side_ok client "$2" &&
		grep 'iters in' "$2" | sed 's/.*= //'
}

# pair LABEL SERVER_PREFIX CLIENT_PREFIX SERVER_ADDR PROGRAM ARGS...
pair() {
	local label=$1 spre=$2 cpre=$3 addr=$4
	shift 4
	run_two "$label" "$spre" "$cpre" "$addr" "$tmp/server.conf" \
		"$tmp/client.conf" pingpong_ok "$@"
}

# perf_pair LABEL SERVER_PREFIX CLIENT_PREFIX SERVER_ADDR SERVER_CONF
#           CLIENT_CONF PROGRAM ARGS...
perf_pair() {
	run_two "$1" "$2" "$3" "$4" "$5" "$6" perftest_ok "${@:7}"
}

programs() {
	local label=$1 spre=$2 cpre=$3 addr=$4
	pair "$label" "$spre" "$cpre" "$addr" ibv_rc_pingpong -d dpib0 -g 0 -n 2000
	pair "$label" "$spre" "$cpre" "$addr" ibv_rc_pingpong -d dpib0 -g 0 -e -n 1000
	for s in 1 1024 4096 65536; do
		pair "$label" "$spre" "$cpre" "$addr" ibv_rc_pingpong -d dpib0 -g 0 -s $s -n 300
	done
	pair "$label" "$spre" "$cpre" "$addr" ibv_rc_pingpong -d dpib0 -g 0 -n 20000
	pair "$label" "$spre" "$cpre" "$addr" ibv_rc_pingpong -d dpib0 -g 0 -N -n 1000
	pair "$label" "$spre" "$cpre" "$addr" ibv_uc_pingpong -d dpib0 -g 0 -n 1000
	pair "$label" "$spre" "$cpre" "$addr" ibv_ud_pingpong -d dpib0 -g 0 -n 1000
	pair "$label" "$spre" "$cpre" "$addr" ibv_ud_pingpong -d dpib0 -g 0 -e -n 500
	pair "$label" "$spre" "$cpre" "$addr" ibv_srq_pingpong -d dpib0 -g 0 -n 1000
}

single_process_tools() {
	local out="$tmp/tool.log"

	if timeout $T "$run" ibv_devices >"$out" 2>&1 &&
	   grep -Eq "^[[:space:]]+dpib0[[:space:]]+[0-9a-f]{16}" "$out"; then
		ok "ibv_devices lists dpib0"
	else
		fail "ibv_devices"; cat "$out"
	fi
	if timeout $T "$run" ibv_devinfo -v >"$out" 2>&1 &&
	   grep -q "hca_id:.*dpib0" "$out" && grep -q "PORT_ACTIVE" "$out" &&
	   grep -q "link_layer:.*Ethernet" "$out" &&
	   grep -q "GID\[  0\]:.*::ffff:127.0.0.1, RoCE v2" "$out" &&
	   grep -q "active_mtu:.*4096" "$out"; then
		ok "ibv_devinfo -v"
	else
		fail "ibv_devinfo -v"; cat "$out"
	fi
	# ibv_asyncwatch waits for events until stopped: it must get as far as
	# waiting (its banner) and be ended by the time limit, not crash.
	timeout 2 "$run" ibv_asyncwatch -d dpib0 >"$out" 2>&1
	if [ $? -eq 124 ] && grep -q "dpib0: async event FD" "$out"; then
		ok "ibv_asyncwatch waits for events"
	else
		fail "ibv_asyncwatch"; cat "$out"
	fi
}

# memif_confs [LINE...]: a memif server and client configuration, the
# server 192.0.2.1 (and 2001:db8::1), the client .2 (::2), with LINEs added
# to both devices.
memif_confs() {
	{
		printf '[engine]\nmode = inline\n[device dpib0]\n'
		printf 'port = net_memif0,role=server,socket=%s,%s\n' \
			"$tmp/memif.sock" 'socket-abstract=no,id=0'
		printf 'ip = 192.0.2.1\nmtu = 1500\n'
		printf '%s\n' "$@"
	} >"$tmp/server.conf"
	sed -e 's/role=server/role=client/' -e 's/192.0.2.1/192.0.2.2/' \
		-e 's/2001:db8::1/2001:db8::2/' \
		"$tmp/server.conf" >"$tmp/client.conf"
}

memif_link() {
	memif_confs
	programs memif "" "" 127.0.0.1
	# Both GID kinds on VLAN 42: GID 0 is IPv4-mapped, GID 1 the IPv6
	# address; the peer's MAC comes from ARP or Neighbor Discovery.
	memif_confs "ip6 = 2001:db8::1" "vlan = 42"
	local l=memif-vlan42
	pair $l "" "" 127.0.0.1 ibv_rc_pingpong -d dpib0 -g 1 -n 2000
	pair $l "" "" 127.0.0.1 ibv_rc_pingpong -d dpib0 -g 1 -s 65536 -n 300
	pair $l "" "" 127.0.0.1 ibv_ud_pingpong -d dpib0 -g 1 -n 1000
	pair $l "" "" 127.0.0.1 ibv_rc_pingpong -d dpib0 -g 0 -n 1000
	pair $l "" "" 127.0.0.1 ibv_ud_pingpong -d dpib0 -g 0 -n 1000
	port_events
}

# Port events, as rxe sends them on its netdev's carrier: ibv_asyncwatch
# on the memif server sees IBV_EVENT_PORT_ACTIVE when a client attaches
# and IBV_EVENT_PORT_ERR when it leaves (the client: another
# ibv_asyncwatch, stopped after 2 s).
port_events() {
	local s="$tmp/aw-server.log" c="$tmp/aw-client.log" srv
	memif_confs "link_wait_ms = 0"
	rm -f "$tmp/memif.sock"
	timeout 8 "$run" -c "$tmp/server.conf" ibv_asyncwatch -d dpib0 \
		>"$s" 2>&1 &
	srv=$!
	sleep 1
	timeout 2 "$run" -c "$tmp/client.conf" ibv_asyncwatch -d dpib0 \
		>"$c" 2>&1
	sleep 1
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	if grep -A1 "PORT_ACTIVE (9), port 1" "$s" |
	   grep -q "PORT_ERR (10), port 1"; then
		ok "memif port events: ibv_asyncwatch saw the port come up" \
			"and go down"
	else
		fail "memif port events"
		sed 's/^/  server: /' "$s"
		sed 's/^/  client: /' "$c"
	fi
}

af_packet_link() {
	veth_pair dpib-mp-a dpib-va dpib-mp-b dpib-vb 1500 ||
		{ fail "af_packet: network namespaces"; return; }
	# The kernel keeps .1/.2 for the programs' TCP exchange; the RoCE
	# devices own .11/.12 on the same link.
	cat >"$tmp/server.conf" <<EOF
[engine]
mode = inline
[device dpib0]
port = net_af_packet0,iface=dpib-va
ip = 192.0.2.11
mtu = 1500
EOF
	sed -e 's/dpib-va/dpib-vb/' -e 's/192.0.2.11/192.0.2.12/' \
		"$tmp/server.conf" >"$tmp/client.conf"
	programs af_packet "ip netns exec dpib-mp-a" "ip netns exec dpib-mp-b" \
		192.0.2.1
	# perftest: its server only waits, so it needs an engine lcore
	# (adaptive); an inline client drives its engine by posting and
	# polling. ib_write_lat polls memory for the peer's WRITE, so both
	# of its sides need an engine lcore.
	sed '/^\[engine\]/,/^mode/d' "$tmp/server.conf" >"$tmp/server-lcore.conf"
	sed '/^\[engine\]/,/^mode/d' "$tmp/client.conf" >"$tmp/client-lcore.conf"
	local a="ip netns exec dpib-mp-a" b="ip netns exec dpib-mp-b" p
	for p in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
		perf_pair af_packet "$a" "$b" 192.0.2.1 "$tmp/server-lcore.conf" \
			"$tmp/client.conf" $p -d dpib0 -x 0 -n 500 -F
	done
	perf_pair af_packet "$a" "$b" 192.0.2.1 "$tmp/server-lcore.conf" \
		"$tmp/client-lcore.conf" ib_write_lat -d dpib0 -x 0 -n 300 -F
}

single_process_tools
case $which in
memif) memif_link ;;
af_packet) af_packet_link ;;
*) memif_link; af_packet_link ;;
esac
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
