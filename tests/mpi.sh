#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# mpi.sh BUILD PROGRAM [TLS]: Debian's Open MPI across two dpib devices.
# Two ranks on this machine, each with a dpib device of its own (a memif
# pair: rank 0 the server, rank 1 the client, chosen by the wrapper from
# OMPI_COMM_WORLD_RANK), Open MPI's UCX PML over UCX's rc_verbs and
# ud_verbs on dpib (or TLS). Passes when PROGRAM says "MPI OK" and the
# dpib counters of both ranks show the traffic.
set -uo pipefail

build=$(cd "${1:?usage: mpi.sh BUILD PROGRAM [TLS]}" && pwd)
prog=${2:?usage: mpi.sh BUILD PROGRAM [TLS]}
tls=${3:-self,rc_verbs,ud_verbs}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v mpirun >/dev/null ||
	{ echo "SKIP: mpirun missing (apt-get install openmpi-bin)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The shipped memif pair with a socket of this run's own: no other suite's
# server or stale socket can stand in for rank 0's.
for side in server client; do
	sed "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
		"$top/config/memif-$side.conf" >"$tmp/memif-$side.conf"
done
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then
	c=$tmp/memif-server.conf
else
	c=$tmp/memif-client.conf
fi
DPIB_EXIT_COUNTERS=$tmp/counters.\$OMPI_COMM_WORLD_RANK exec "$build/app/dpib-run" -c "\$c" "\$@"
EOF
chmod +x "$tmp/rank.sh"

# Open MPI's own transports off (shared memory, TCP): UCX on dpib only.
# The limit is below UCX's UD peer timeout (30 s): a run that needs it lost
# frames (each rank wires up to itself too, through its device's own GID).
# stacks: each rank's threads (gdb), into $tmp/stacks, if they still run.
stacks() {
	local p
	command -v gdb >/dev/null || return
	for p in $(pgrep -f "^$prog" 2>/dev/null); do
		echo "== rank process $p"
		gdb -p "$p" -batch -ex "thread apply all bt 16" 2>/dev/null |
			grep -E '^Thread|^#'
	done >"$tmp/stacks" 2>&1
}

# run: one mpirun, 25 s at most; its status in rc. The ranks' stacks are
# taken at 23 s should they still run then.
run() {
	local w
	rm -f "$tmp/counters.0" "$tmp/counters.1" "$tmp/stacks" \
		"$tmp/memif.sock" "$tmp/done"
	(for w in $(seq 230); do
		[ -e "$tmp/done" ] && exit 0
		sleep 0.1
	 done
	 stacks) >/dev/null 2>&1 &
	w=$!
	start=$(date +%s)
	timeout 25 mpirun --allow-run-as-root --oversubscribe -np 2 \
		--mca pml ucx --mca btl '^vader,tcp,openib,uct' \
		--mca osc '^ucx' -x UCX_TLS="$tls" \
		-x UCX_NET_DEVICES=dpib0:1 \
		"$tmp/rank.sh" "$prog" >"$tmp/out" 2>&1
	rc=$?
	touch "$tmp/done"
	wait "$w" 2>/dev/null
	grep -v "VM_UNMAP" "$tmp/out"
	echo "mpirun status $rc after $(($(date +%s) - start)) s"
}

run
# A run in which neither rank printed a line nor exited (no counters)
# hung before MPI_Init returned: seen twice in about ten CI rehearsals,
# right after the ucx suite, never alone (30 of 30). Unexplained: the
# ranks' stacks are printed for the next look, and the run is made once
# more; any other failure, or a second such hang, fails the test.
if [ "$rc" = 124 ] && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/counters.0" ] &&
   [ ! -e "$tmp/counters.1" ]; then
	echo "both ranks hung at start-up, printing nothing; their stacks:"
	cat "$tmp/stacks" 2>/dev/null
	echo "running it once more"
	run
fi
fail=0
[ "$rc" = 0 ] && grep -q "^MPI OK" "$tmp/out" || fail=1
for r in 0 1; do
	p=$(awk '$2 == "tx_packets" { print $3 }' "$tmp/counters.$r" 2>/dev/null)
	echo "rank $r: dpib tx_packets ${p:-none}"
	[ "${p:-0}" -ge 1000 ] || fail=1
done
[ "$fail" = 0 ] && echo PASS || echo FAIL
exit "$fail"
