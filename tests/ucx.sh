#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# ucx.sh BUILD: UCX on dpib (issue 22), with Debian's unmodified ucx_perftest.
#  - UCX sees dpib: through dpib-run, `ucx_info -d` lists the dpib0 memory
#    domain with rc_verbs and ud_verbs (as root and as an ordinary user),
#    the /sys/class/infiniband tree has what UCX reads, the host's /dev and
#    /sys are unchanged, and DPIB_RUN_NS=no shows the plain view;
#  - UCT rc_verbs and ud_verbs, and UCP over them, between two processes on
#    the two ends of a veth pair (af_packet, two namespaces) and over memif:
#    every run must print its "Final:" line, and the dpib counters the
#    client leaves at exit (DPIB_EXIT_COUNTERS) must show the traffic;
#  - mtu = 9000 gives IB MTU 4096 on af_packet and net_tap.
set -uo pipefail

build=$(cd "${1:?usage: ucx.sh BUILD}" && pwd)
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=$build/app/dpib-run
# shellcheck source=tests/two_hosts.sh
. "$top/tests/two_hosts.sh"
command -v ucx_perftest >/dev/null ||
	{ echo "SKIP: ucx_perftest missing (apt-get install ucx-utils)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespaces)"; exit 77; }

tmp=$(mktemp -d)
na=dpib-ucx-a
nb=dpib-ucx-b
remove_at_exit "$na" "$nb" "$tmp"
fails=0
passes=0
ok() { echo "ok - $*"; passes=$((passes + 1)); }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }

# --- UCX sees the device --------------------------------------------------
host_dev=$(ls -d /dev/infiniband 2>/dev/null)
host_sys=$(ls -d /sys/class/infiniband 2>/dev/null)
"$run" ucx_info -d >"$tmp/info" 2>&1
if grep -q "Memory domain: dpib0" "$tmp/info" &&
   grep -A2 "Transport: rc_verbs" "$tmp/info" | grep -q "Device: dpib0:1" &&
   grep -A2 "Transport: ud_verbs" "$tmp/info" | grep -q "Device: dpib0:1"; then
	ok "ucx_info -d: dpib0 with rc_verbs and ud_verbs"
else
	bad "ucx_info -d does not list dpib0"; cat "$tmp/info"
fi
if DPIB_RUN_NS=no "$run" ucx_info -d 2>&1 | grep -q "Memory domain: dpib0" &&
   [ -z "$host_dev" ]; then
	bad "DPIB_RUN_NS=no: UCX sees dpib0 without the namespace"
else
	ok "DPIB_RUN_NS=no: the plain view"
fi
if setpriv --reuid=65534 --regid=65534 --clear-groups "$run" ucx_info -d \
	2>/dev/null | grep -q "Memory domain: dpib0"; then
	ok "as an ordinary user (user namespace)"
else
	bad "an ordinary user's UCX does not see dpib0"
fi
"$run" sh -c 'ibv_devices >/dev/null &&
	d=/sys/class/infiniband/dpib0 &&
	cat $d/node_type $d/ports/1/state $d/ports/1/link_layer \
	    $d/ports/1/gid_attrs/types/0 $d/ports/1/gids/0 $d/ports/1/pkeys/0 &&
	ls -l /dev/infiniband/uverbs0' >"$tmp/sys" 2>&1
if grep -qx "1: CA" "$tmp/sys" && grep -qx "4: ACTIVE" "$tmp/sys" &&
   grep -qx "Ethernet" "$tmp/sys" && grep -qx "RoCE v2" "$tmp/sys" &&
   grep -qx "0000:0000:0000:0000:0000:ffff:7f00:0001" "$tmp/sys" &&
   grep -qx "0xffff" "$tmp/sys" && grep -q "^c.*/dev/infiniband/uverbs0$" "$tmp/sys"; then
	ok "sysfs tree and device node from the live device"
else
	bad "sysfs tree"; cat "$tmp/sys"
fi
# rdma-core's diagnostics read the tree and never call verbs: dpib-run
# fills it for them. Not on memif, whose bring-up would wait for the peer
# (link_wait_ms): there the program finds an empty tree at once.
"$run" ibstat >"$tmp/ibstat" 2>&1
"$run" ibstatus >"$tmp/ibstatus" 2>&1
if grep -qx "CA 'dpib0'" "$tmp/ibstat" &&
   grep -q "State: Active" "$tmp/ibstat" &&
   grep -q "Link layer: Ethernet" "$tmp/ibstat" &&
   grep -q "Node GUID: 0x$("$run" ibv_devinfo | awk '/node_guid/ { gsub(":", "", $2); print $2 }')$" \
	"$tmp/ibstat" &&
   grep -q "default gid:.*0000:0000:0000:0000:0000:ffff:7f00:0001" \
	"$tmp/ibstatus" && grep -q "state:.*4: ACTIVE" "$tmp/ibstatus"; then
	ok "ibstat and ibstatus list dpib0 as ibv_devinfo does"
else
	bad "ibstat / ibstatus"; cat "$tmp/ibstat" "$tmp/ibstatus"
fi
printf '[device dpib0]\nport = net_memif0,socket=%s/m.sock,socket-abstract=no,role=server\nip = 192.0.2.1\nlink_wait_ms = 20000\n' \
	"$tmp" >"$tmp/memif-wait.conf"
t0=$SECONDS
timeout 15 "$run" -c "$tmp/memif-wait.conf" ibstat >"$tmp/ibstat" 2>&1
if [ $((SECONDS - t0)) -lt 10 ] && ! grep -q "dpib0" "$tmp/ibstat"; then
	ok "memif: no bring-up before a program that does not call verbs"
else
	bad "memif: dpib-run brought the device up ($((SECONDS - t0)) s)"
	cat "$tmp/ibstat"
fi
if [ "$(ls -d /dev/infiniband 2>/dev/null)" = "$host_dev" ] &&
   [ "$(ls -d /sys/class/infiniband 2>/dev/null)" = "$host_sys" ]; then
	ok "the host's /dev and /sys unchanged"
else
	bad "dpib-run changed the host's /dev or /sys"
fi

# --- two processes ----------------------------------------------------------
# pair KIND NAME "ENV..." ARGS...: ucx_perftest server and client, over
# veth (KIND veth) or memif; the client's Final line and its counters.
pair() {
	local kind=$1 name=$2 env=$3 sc cc sx cx pid rc pkts
	shift 3
	case ${DPIB_UCX_ONLY:-$kind} in *"$kind"*) ;; *) return 0 ;; esac
	if [ "$kind" = veth ]; then
		sc=$top/config/af_packet-a.conf cc=$top/config/af_packet-b.conf
		sx=(ip netns exec "$na") cx=(ip netns exec "$nb") addr=192.0.2.1
	else
		# A socket of this run's own (mpi.sh's ranks use another).
		sed "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
			"$top/config/memif-server.conf" >"$tmp/memif-s.conf"
		sed "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
			"$top/config/memif-client.conf" >"$tmp/memif-c.conf"
		sc=$tmp/memif-s.conf cc=$tmp/memif-c.conf
		sx=() cx=() addr=127.0.0.1
	fi
	rm -f "$tmp/counters"
	# shellcheck disable=SC2086
	"${sx[@]}" env $env timeout 60 "$run" -c "$sc" \
		ucx_perftest -d dpib0:1 -p 13337 "$@" >"$tmp/s.log" 2>&1 &
	pid=$!
	sleep 1
	# shellcheck disable=SC2086
	"${cx[@]}" env $env DPIB_EXIT_COUNTERS="$tmp/counters" timeout 60 \
		"$run" -c "$cc" ucx_perftest -d dpib0:1 -p 13337 "$@" "$addr" \
		>"$tmp/c.log" 2>&1
	rc=$?
	wait "$pid"
	pkts=$(exit_counter tx_packets "$tmp/counters")
	if [ "$rc" = 0 ] && grep -q "^Final:" "$tmp/c.log" &&
	   [ "$pkts" -ge 100 ]; then
		ok "$kind $name: $(grep '^Final:' "$tmp/c.log" | tr -s ' ' |
			cut -d' ' -f2-6) (dpib tx_packets $pkts)"
	else
		bad "$kind $name: status $rc, tx_packets ${pkts:-none}"
		tail -5 "$tmp/c.log"; tail -5 "$tmp/s.log"
	fi
}

veth_pair "$na" veth-a "$nb" veth-b 1500 noipv6 || exit 1
dev=UCX_NET_DEVICES=dpib0:1
# UCT: every operation of rc_verbs; active messages of ud_verbs (the UD
# transport UCP wires up with). -n after the defaults wins.
# (rc_verbs has no 64-bit swap on any verbs device: UCX does it with
# mlx5's masked atomics only, and says "does not support" for rxe too.)
for t in "am_lat -s 8" "am_lat -s 16" "am_bw -s 4096 -D bcopy -n 2000" \
	 "put_lat -s 8" "put_bw -s 65536 -D zcopy -n 300" \
	 "get -s 65536 -D zcopy -n 300" "add_lat" "fadd" "cswap"; do
	# shellcheck disable=SC2086
	pair veth "rc_verbs $t" "$dev" -x rc_verbs -n 1000 -t $t
done
for t in "am_lat -s 16" "am_bw -s 1000 -D bcopy -n 2000"; do
	# shellcheck disable=SC2086
	pair veth "ud_verbs $t" "$dev" -x ud_verbs -n 1000 -t $t
done
# UCP over both transports, and over UD alone.
for t in "tag_lat -s 8" "tag_bw -s 65536 -n 300" "tag_sync_lat -s 8" \
	 "ucp_put_bw -s 65536 -n 300" "ucp_get -s 65536 -n 300" \
	 "stream_bw -s 65536 -n 300" "ucp_am_lat -s 8"; do
	# shellcheck disable=SC2086
	pair veth "UCP rc_verbs,ud_verbs $t" "$dev UCX_TLS=rc_verbs,ud_verbs" \
		-n 1000 -t $t
done
for t in "tag_lat -s 8" "tag_bw -s 65536 -n 300" "tag_sync_lat -s 8" \
	 "ucp_put_bw -s 65536 -n 300" "ucp_get -s 65536 -n 300" \
	 "stream_bw -s 65536 -n 300" "ucp_am_lat -s 8"; do
	# shellcheck disable=SC2086
	pair veth "UCP ud_verbs $t" "$dev UCX_TLS=ud_verbs" -n 1000 -t $t
done
# memif: the same device kind perftest uses between two local processes.
for t in "-x rc_verbs -t am_lat -s 8" "-x ud_verbs -t am_lat -s 16" \
	 "-x rc_verbs -t put_bw -s 65536 -D zcopy -n 300"; do
	# shellcheck disable=SC2086
	pair memif "UCT $t" "$dev" -n 1000 $t
done
pair memif "UCP rc_verbs,ud_verbs tag_lat -s 8" \
	"$dev UCX_TLS=rc_verbs,ud_verbs" -n 1000 -t tag_lat -s 8

# --- one process, both ends on one device ----------------------------------
# ucx_perftest's loopback mode connects a worker to itself through the
# device's own GID (as UCX's wire-up of a process to itself does): the
# frames loop back inside dpib.
for t in "-x rc_verbs -t am_lat -s 16" "-x ud_verbs -t am_lat -s 16" \
	 "-x rc_verbs -t put_bw -s 65536 -D zcopy -n 300"; do
	rm -f "$tmp/counters"
	# shellcheck disable=SC2086
	ip netns exec "$na" env $dev DPIB_EXIT_COUNTERS="$tmp/counters" \
		timeout 60 "$run" -c "$top/config/af_packet-a.conf" \
		ucx_perftest -d dpib0:1 -n 1000 $t -l >"$tmp/c.log" 2>&1
	rc=$?
	lo=$(exit_counter tx_loopback_packets "$tmp/counters")
	if [ "$rc" = 0 ] && grep -q "^Final:" "$tmp/c.log" && [ "$lo" -ge 100 ]; then
		ok "loopback (-l) $t: $(grep '^Final:' "$tmp/c.log" | tr -s ' ' |
			cut -d' ' -f2-6) (dpib tx_loopback_packets $lo)"
	else
		bad "loopback (-l) $t: status $rc, tx_loopback_packets ${lo:-none}"
		tail -5 "$tmp/c.log"
	fi
done

# --- jumbo frames on virtual ports ------------------------------------------
ip -n "$na" link set veth-a mtu 9000 && ip -n "$nb" link set veth-b mtu 9000
sed 's/^mtu = .*/mtu = 9000/' "$top/config/af_packet-a.conf" >"$tmp/a9.conf"
printf '[device dpib0]\nport = net_tap0,iface=dpibtap9\nip = 192.0.2.31\nmtu = 9000\n' \
	>"$tmp/t9.conf"
for c in a9 t9; do
	m=$(ip netns exec "$na" "$run" -c "$tmp/$c.conf" ibv_devinfo -v 2>/dev/null |
	    awk '/active_mtu/ { print $2 }')
	if [ "$m" = 4096 ]; then
		ok "mtu = 9000 on $c: active MTU 4096"
	else
		bad "mtu = 9000 on $c: active MTU ${m:-none}"
	fi
done

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
