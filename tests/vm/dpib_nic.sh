#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib_nic.sh BUILD: dpib on a PCI NIC, end to end, in a QEMU guest.
#
# The guest (dpib_guest.sh) binds its virtio-net-pci NIC to vfio-pci with
# dpib-setup and runs ibv_rc_pingpong, ib_write_bw and ib_read_bw on dpib
# over DPDK's net_virtio PMD; the peer is dpib on af_packet on the host
# side of the guest's tap, in a network namespace of this test. Passes
# when every program completes on both sides without an error and the
# guest's counters show DMA-registered, zero-copy traffic.
set -uo pipefail

build=$(cd "${1:?usage: dpib_nic.sh BUILD}" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ns=dpib-vm-nic
tap=dpibvm0
dir=$(mktemp -d /tmp/dpib-vm-nic.XXXXXX)
VM_EXTRA_SHARES=$dir
VM_ENV="DPIB_BUILD=$build VMX_DIR=$dir${DPIB_ZERO_COPY:+ DPIB_ZERO_COPY=$DPIB_ZERO_COPY}"
VM_USER_NET=1
VM_IOMMU=${VM_IOMMU:-0}
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"

fail=0
summary=
say() { echo "dpib-nic: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (namespaces, QEMU's tap)"; exit 77; }
case $build in
"$VM_SHARE"/*) ;;
*) say "the build directory $build must lie in $VM_SHARE (shared with the guest)"; exit 1 ;;
esac

vm_netns_up "$ns" "$tap" 192.0.2.1/24 || exit 1
cat >"$dir/host.conf" <<EOF
[engine]
mode = inline

[device dpib0]
port = net_af_packet0,iface=$tap
ip = 192.0.2.11
mtu = 1500
EOF

# serve NAME PROGRAM...: one server at a time, the guest's client against
# it; both must end with status 0.
serve() {
	local name=$1 pid rc end gst
	shift

	DPIB_CONF=$dir/host.conf DPIB_EXIT_COUNTERS=$dir/host-counters-$name \
		ip netns exec "$ns" timeout 900 \
		"$build/app/dpib-run" "$@" >"$dir/host-$name.log" 2>&1 &
	pid=$!
	sleep 1
	touch "$dir/ready-$name"
	end=$(($(date +%s) + 900))
	until [ -e "$dir/done-$name" ] || [ "$(date +%s)" -ge "$end" ] ||
	      ! kill -0 "$VM_PID" 2>/dev/null; do
		sleep 1
	done
	gst=$(cat "$dir/done-$name" 2>/dev/null || echo none)
	# The client is done: the server ends on its own, or it hangs.
	for _ in $(seq 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	say "$name: host status $rc, guest status $gst"
	sed 's/^/  host: /' "$dir/host-$name.log" | tail -8
	summary+="$name: host status $rc, guest status $gst"$'\n'
	[ "$rc" = 0 ] && [ "$gst" = 0 ] || fail=1
}

start=$(date +%s)
vm_start "$ns" "$tap" "$here/dpib_guest.sh" 1800 || exit 1
vm_wait_log 'dpib-guest: at ' 600 || { cat "$VM_LOG"; exit 1; }
# -F: see dpib_guest.sh.
serve pingpong ibv_rc_pingpong -d dpib0 -g 0 -n 200 -s 4096
serve write_bw ib_write_bw -d dpib0 -x 0 -s 65536 -n 300 --report_gbits -F
serve read_bw ib_read_bw -d dpib0 -x 0 -s 65536 -n 300 --report_gbits -b -F
vm_wait
vrc=$?
tr -d '\r' <"$VM_LOG" | grep -E 'dpib-guest|dpib-setup|^ *[0-9]+ +[0-9]+ |#bytes|iters|Device|0000:00:04.0' | head -80
say "guest status $vrc after $(($(date +%s) - start)) s"
[ "$vrc" = 0 ] || fail=1

# What the guest's dpib did: zero-copy frames over PCI, which it sends
# only from DMA-registered MRs (WRITE data; READ responses with -b).
for s in pingpong write_bw read_bw; do
	c=$dir/host-counters-$s
	[ -f "$c" ] && sed "s/^/  host $s: /" "$c"
	c=$dir/guest-counters-$s
	[ -f "$c" ] && sed "s/^/  guest $s: /" "$c"
	[ "$s" = pingpong ] || [ "${DPIB_ZERO_COPY:-}" = off ] && continue
	z=$(awk '$2 == "tx_zero_copy_packets" { print $3 }' "$c" 2>/dev/null)
	if [ -z "$z" ] || [ "$z" -le 0 ]; then
		say "FAIL: no zero-copy frames in $s"
		fail=1
	fi
done
rm -rf "$dir"
# Last, where a log cut to its tail still shows it.
printf '%s' "$summary" | sed 's/^/dpib-nic: /'
[ "$fail" = 0 ] && say "PASS" || say "FAIL"
exit "$fail"
