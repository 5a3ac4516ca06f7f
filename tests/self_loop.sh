#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# A device talking to itself on a real port: QPs of one device connected to
# each other through the device's own GID, as an HCA allows (rxe and mlx5
# loop such frames back inside the adapter; UCX wires a worker up to itself
# that way, and Open MPI's finalize waited 30 s for a UD peer timeout
# before dpib did too). The verbs suites that address GID 0 of their own
# device run on net_af_packet (one end of a veth pair in a namespace of
# this script's), in adaptive and inline mode; each must pass, the frames
# must have gone round the device's own loopback (tx_loopback_packets), and
# the port must have carried none of them (tx_packets: the announcement
# ARP alone). test_rc also runs on two engines with its QPs spread over
# them (a looped frame for the other engine's QP is handed over).
#
# Usage (root): self_loop.sh BUILD_DIR
set -u
build=$(cd "${1:?usage: self_loop.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$src/tests/two_hosts.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespaces)"; exit 77; }
tmp=$(mktemp -d /tmp/dpib-self.XXXXXX)
na=dpib-self-a
nb=dpib-self-b
remove_at_exit "$na" "$nb" "$tmp"
veth_pair "$na" self-a "$nb" self-b 9000 noipv6 || exit 1
printf '[device dpib0]\nport = net_af_packet0,iface=self-a\nip = 192.0.2.11\nmtu = 9000\n' \
	>"$tmp/self.conf"

for t in rc mw verbs_ex compat timestamps rc:2; do
	engines=${t#*:}
	[ "$engines" = "$t" ] && engines=1
	t=${t%:*}
	for mode in adaptive inline; do
		rm -f "$tmp/counters"
		ip netns exec "$na" env DPIB_CONF="$tmp/self.conf" \
			DPIB_SHARED="${DPIB_SHARED:-$src/../shared}" \
			DPIB_ENGINE_MODE=$mode DPIB_ENGINES="$engines" \
			DPIB_PLACEMENT=spread \
			DPIB_EXIT_COUNTERS="$tmp/counters" \
			timeout 120 "$build/tests/test_$t" >"$tmp/log" 2>&1
		rc=$?
		lo=$(exit_counter tx_loopback_packets "$tmp/counters")
		wire=$(exit_counter tx_packets "$tmp/counters")
		if [ "$rc" = 0 ] && [ "$lo" -ge 50 ] && [ "$wire" -le 4 ]; then
			ok "test_$t ($mode, $engines engine(s)): $(tail -1 "$tmp/log"), $lo frames looped back, $wire on the port"
		else
			fail "test_$t ($mode, $engines engine(s)): status $rc, tx_loopback_packets $lo, tx_packets $wire"
			grep -E "FAIL" "$tmp/log" | head -5
		fi
	done
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
