#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Unmodified RDMA-CM programs (Debian's rdmacm-utils and perftest) on
# dpib's librdmacm, two processes as two hosts A and B, over two kinds of
# link:
#   memif      net_memif server (A, 192.0.2.1) and client (B, .2) over a
#              unix socket in this script's scratch directory
#   af_packet  net_af_packet on the two ends of a veth pair, each end in a
#              network namespace of its own (created here, removed at
#              exit); the RoCE devices own .11 (A) and .12 (B)
# The connections, their address and route resolution and the CM MADs
# all go through dpib: the programs exchange nothing over the kernel.
# Every program has a time limit; a run passes when both sides exit 0 and
# print what shows their work done.
#
# Usage: rdmacm.sh BUILD_DIR SOURCE_DIR [memif|af_packet|all]
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
which=${3:-all}
run="$build/app/dpib-run"
tmp=$(mktemp -d /tmp/dpib-cm.XXXXXX)
. "$src/tests/two_hosts.sh"
T=20	# seconds per program; they take a few when all goes well
G=3	# seconds a server has to finish after its client failed

remove_at_exit dpib-cm-a dpib-cm-b "$tmp"

# Per link: each host's command prefix, configuration and RoCE address.
declare -A pre conf ip

# gone PID SECONDS: PID has ended, or ends within SECONDS.
gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}

# cm_pair LABEL CHECK S C SERVER_CMD CLIENT_CMD [stays]: the server on
# host S (a or b), a second later the client on host C (over memif, the
# server's device waits for the client's to attach: the server cannot
# say it is listening before the client starts). stays: the server
# serves until stopped; it is stopped once the client is done. The run
# passes when both exit 0 (a staying server: ended by that stop) and
# CHECK SERVER_LOG CLIENT_LOG prints the figure to report. T=SECONDS
# before the call: another time limit.
cm_pair() {
	local label=$1 check=$2 s=$3 c=$4 scmd=$5 ccmd=$6 stays=${7:-}
	local slog="$tmp/server.log" clog="$tmp/client.log"
	local srv rc src got
	rm -f "$tmp/memif.sock"
	# shellcheck disable=SC2086
	${pre[$s]} timeout $T "$run" -c "${conf[$s]}" $scmd >"$slog" 2>&1 &
	srv=$!
	sleep 1
	# shellcheck disable=SC2086
	${pre[$c]} timeout $T "$run" -c "${conf[$c]}" $ccmd >"$clog" 2>&1
	rc=$?
	if [ -n "$stays" ]; then
		kill -TERM $srv 2>/dev/null
	elif [ $rc -ne 0 ]; then
		gone $srv $G || kill -TERM $srv 2>/dev/null
	fi
	wait $srv
	src=$?
	# A staying server stopped by its SIGTERM has done its part.
	[ -n "$stays" ] && [ $src -eq 143 ] && src=0
	if [ $rc -eq 0 ] && [ $src -eq 0 ] &&
	   got=$($check "$slog" "$clog"); then
		ok "$label: $scmd / $ccmd ($got)"
	else
		fail "$label: $scmd / $ccmd (server rc $src, client rc $rc)"
		awk '{ print "  server: " $0 }' "$slog" | tail -8
		awk '{ print "  client: " $0 }' "$clog" | tail -8
		crash_stack server "$slog"
		crash_stack client "$clog"
	fi
}

# rping: the client's -v line for each ping, the server's disconnect.
rping_ok() {
	local n

	n=$(grep -c "^ping data: rdma-ping-" "$2")
	[ "$n" -eq 100 ] && grep -q "server DISCONNECT EVENT" "$1" &&
		echo "$n pings"
}

# ucmatose, udaddy, mckey: both sides moved their messages and say so.
transfers_ok() {
	grep -q "data transfers complete" "$1" &&
		grep -q "return status 0" "$1" &&
		grep -q "data transfers complete" "$2" &&
		grep -q "return status 0" "$2" && echo "messages through"
}

rdma_server_ok() {
	grep -q "rdma_server: end 0" "$1" && grep -q "rdma_client: end 0" "$2" &&
		echo "send and receive"
}

# cmtime: every connection went through each step (a failed one prints
# its event or error); the client's connect row in ms.
cmtime_ok() {
	! grep -Eq "RDMA_CM_EVENT_|event: |failing|failure" "$1" "$2" &&
		grep -q "^disconnect *:" "$2" &&
		grep "^connect *:" "$2" | awk '{ print $3 " ms to connect" }'
}

# peer_gone LABEL HOW SIDE: cm_peer's server on a, its client on b leaves
# mid-connection by HOW (exit: its librdmacm says goodbye with a DREQ;
# kill: SIGKILL, nobody says anything). SIDE passive: the server waits for
# DISCONNECTED; active: it disconnects itself and its unanswered DREQ
# must still end in DISCONNECTED (-ETIMEDOUT), never a hang.
peer_gone() {
	local label=$1 how=$2 side=$3 slog="$tmp/server.log" clog="$tmp/client.log"
	local srv rc src want=0 peer="$build/tests/cm_peer"

	[ "$how" = kill ] && want=137
	rm -f "$tmp/memif.sock"
	${pre[a]} timeout $T env DPIB_CM_TIMEOUT=12 "$run" -c "${conf[a]}" \
		"$peer" server "${ip[a]}" 7490 "$side" >"$slog" 2>&1 &
	srv=$!
	sleep 1
	${pre[b]} timeout $T env DPIB_CM_TIMEOUT=12 "$run" -c "${conf[b]}" \
		"$peer" client "${ip[a]}" 7490 "$how" >"$clog" 2>&1
	rc=$?
	gone $srv $T || kill -TERM $srv 2>/dev/null
	wait $srv
	src=$?
	# Killed right after its ESTABLISHED, the client may take its RTU
	# down with it on memif (the frame waits in the shared ring, which
	# the link's end takes away): the server's REP then goes unanswered
	# and ends in UNREACHABLE (-ETIMEDOUT), as IBA 12.6 has it (cm_peer
	# exits 3). Not on af_packet: a frame sent there is the kernel's.
	if [ "$how" = kill ] && [ $src -eq 3 ] && [[ $label == memif* ]] &&
	   grep -q "^no RTU: unreachable" "$slog"; then
		src=0
	fi
	if [ $rc -eq $want ] && [ $src -eq 0 ] &&
	   grep -q "leaving by $how" "$clog"; then
		ok "$label: client leaves by $how, server $side ($(grep -Eo 'disconnected after.*|no RTU.*' "$slog"))"
	else
		fail "$label: client leaves by $how, server $side (server rc $src, client rc $rc)"
		awk '{ print "  server: " $0 }' "$slog" | tail -8
		awk '{ print "  client: " $0 }' "$clog" | tail -8
		crash_stack server "$slog"
		crash_stack client "$clog"
	fi
}

# rows LABEL: the programs between hosts a and b.
rows() {
	local l=$1 a=${ip[a]} b=${ip[b]}

	cm_pair "$l A->B" rping_ok a b "rping -s -a $a -C 100" \
		"rping -c -a $a -C 100 -v -V"
	cm_pair "$l B->A" rping_ok b a "rping -s -a $b -C 100" \
		"rping -c -a $b -C 100 -v -V"
	cm_pair "$l" transfers_ok a b "ucmatose -c 10" "ucmatose -s $a -c 10"
	cm_pair "$l" transfers_ok a b "udaddy" "udaddy -s $a"
	cm_pair "$l" rdma_server_ok a b "rdma_server -s $a" "rdma_client -s $a"
	cm_pair "$l" perftest_ok a b "ib_send_bw -R -d dpib0 -n 1000 -F" \
		"ib_send_bw -R -d dpib0 -n 1000 -F $a"
	cm_pair "$l" perftest_ok a b "ib_write_lat -R -d dpib0 -n 1000 -F" \
		"ib_write_lat -R -d dpib0 -n 1000 -F $a"
	cm_pair "$l" cmtime_ok a b "cmtime -b $a" "cmtime -s $a -c 100" stays
	# The sender waits 3 s after its join before it sends: time for the
	# receiver's join.
	cm_pair "$l" transfers_ok a b "mckey -m 239.1.2.3 -b $a" \
		"mckey -m 239.1.2.3 -s -b $b"
	peer_gone "$l" exit passive
	peer_gone "$l" kill active
}

memif_link() {
	# Each device has an IPv6 address too (GID 1): one row over it.
	sed -e "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
	    -e "s|^ip = 192.0.2.1$|&\nip6 = 2001:db8::1|" \
		"$src/config/memif-server.conf" >"$tmp/a.conf"
	sed -e "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
	    -e "s|^ip = 192.0.2.2$|&\nip6 = 2001:db8::2|" \
		"$src/config/memif-client.conf" >"$tmp/b.conf"
	pre=([a]="" [b]="")
	conf=([a]="$tmp/a.conf" [b]="$tmp/b.conf")
	ip=([a]=192.0.2.1 [b]=192.0.2.2)
	rows memif
	T=60 cm_pair memif cmtime_ok a b "cmtime -b ${ip[a]}" \
		"cmtime -s ${ip[a]} -c 1000" stays
	# The same with engine lcores that sleep when idle (adaptive, the
	# default mode): each connection's control calls run beside loops
	# asleep in epoll, and the programs' CM threads beside awake ones.
	sed -i "s/^mode = inline$/mode = adaptive/" "$tmp/a.conf" "$tmp/b.conf"
	T=60 cm_pair "memif adaptive" cmtime_ok a b "cmtime -b ${ip[a]}" \
		"cmtime -s ${ip[a]} -c 1000" stays
	cm_pair "memif adaptive" rping_ok a b "rping -s -a ${ip[a]} -C 100" \
		"rping -c -a ${ip[a]} -C 100 -v -V"
	sed -i "s/^mode = adaptive$/mode = inline/" "$tmp/a.conf" "$tmp/b.conf"
	cm_pair "memif IPv6" rping_ok a b "rping -s -a 2001:db8::1 -C 100" \
		"rping -c -a 2001:db8::1 -C 100 -v -V"
	cm_pair "memif IPv6" transfers_ok a b "ucmatose -c 10" \
		"ucmatose -s 2001:db8::1 -c 10"
	cm_pair "memif IPv6" transfers_ok a b "mckey -m ff0e::1:2:3 -b 2001:db8::1" \
		"mckey -m ff0e::1:2:3 -s -b 2001:db8::2"
}

af_packet_link() {
	ip netns del dpib-cm-a 2>/dev/null
	ip netns del dpib-cm-b 2>/dev/null
	veth_pair dpib-cm-a dpib-cva dpib-cm-b dpib-cvb 1500 ||
		{ fail "af_packet: network namespaces"; return; }
	sed "s/veth-a/dpib-cva/" "$src/config/af_packet-a.conf" >"$tmp/a.conf"
	sed "s/veth-b/dpib-cvb/" "$src/config/af_packet-b.conf" >"$tmp/b.conf"
	pre=([a]="ip netns exec dpib-cm-a" [b]="ip netns exec dpib-cm-b")
	conf=([a]="$tmp/a.conf" [b]="$tmp/b.conf")
	ip=([a]=192.0.2.11 [b]=192.0.2.12)
	rows af_packet
	T=60 cm_pair af_packet cmtime_ok a b "cmtime -b ${ip[a]}" \
		"cmtime -s ${ip[a]} -c 1000" stays
}

case $which in
memif) memif_link ;;
af_packet) af_packet_link ;;
*) memif_link; af_packet_link ;;
esac
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
