# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Sourced by the scripts that run two processes as two hosts
# (multiprocess.sh, passive.sh, app/dpib-twohost.sh): the verdict lines and
# their counts, the perftest result check, and the veth pair between two
# namespaces.

passed=0
failed=0

# A program that crashes prints its stack (lib/verbs/eal.c); crash_stack
# shows it from a log: the tail of a log does not reach it.
export DPIB_BACKTRACE=1

# crash_stack LABEL LOG: the stack printed in LOG, if any, each line
# prefixed by LABEL.
crash_stack() {
	sed -n '/^dpib: fatal signal/,$p' "$2" | head -40 | sed "s/^/  $1: /"
}

ok() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }

# perftest_ok SERVER_LOG CLIENT_LOG: the client's result row. The tests
# run perftest with -F: it times its report with a CPU clock it fits
# against gettimeofday after the transfer, a vCPU preempted then spoils
# the fit, and without -F it exits 1 before its closing exchange, failing
# its peer too (CI, d3ec28b: vm_nic). With -F it closes normally and its
# figures read inf or nan (latencies) or 0.00 (rates) instead; the
# transfer itself completed, since perftest exits 1 on any failed
# completion, and the callers check the exit status.
perftest_ok() {
	local row

	row=$(grep -A1 '#bytes' "$2" | tail -1 | tr -s ' \t' ' ')
	echo "$row" | grep -Eq '^ ?[0-9]+ [0-9]+ ([0-9.]+|inf|-?nan)( |$)' &&
		echo "$row"
}

# exit_counter NAME FILE: counter NAME of a DPIB_EXIT_COUNTERS file (the
# last device's that has it), 0 when the file or the counter is missing.
exit_counter() {
	awk -v n="$1" '$2 == n { v = $3 } END { print v + 0 }' "$2" 2>/dev/null ||
		echo 0
}

# remove_at_exit NS_A NS_B DIR: the two namespaces and the scratch
# directory go when the script exits, however it exits.
remove_at_exit() {
	# shellcheck disable=SC2064
	trap "ip netns del '$1' 2>/dev/null; ip netns del '$2' 2>/dev/null; rm -rf '$3'" EXIT
}

# veth_pair NS_A IF_A NS_B IF_B MTU [noipv6]: two namespaces joined by a
# veth pair, 192.0.2.1/24 on A's end and .2 on B's (the programs' TCP
# exchange; the RoCE devices take other addresses on the same link),
# loopback up. noipv6: IPv6 off before the link comes up (no DAD, router
# or listener reports on a link being measured).
veth_pair() {
	ip netns add "$1" && ip netns add "$3" &&
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" ||
		return 1
	ip -n "$1" addr add 192.0.2.1/24 dev "$2"
	ip -n "$3" addr add 192.0.2.2/24 dev "$4"
	if [ "${6:-}" = noipv6 ]; then
		ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip netns exec "$3" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	fi
	ip -n "$1" link set "$2" mtu "$5" up
	ip -n "$3" link set "$4" mtu "$5" up
	ip -n "$1" link set lo up
	ip -n "$3" link set lo up
}
