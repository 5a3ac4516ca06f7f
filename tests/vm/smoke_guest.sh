#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# smoke_guest.sh: the guest half of smoke.sh (run by the guest's init, see
# lib.sh). Binds the virtio NIC to vfio-pci in no-IOMMU mode, runs DPDK's
# testpmd on it in icmpecho mode (answers ARP and ICMP echo requests), says
# SMOKE-TESTPMD-FORWARDING on the console, and stops testpmd when the host
# half writes $SMOKE_DIR/host-done (a directory shared with the host) or
# after $SMOKE_WAIT s. Passes when testpmd received and sent frames.

set -euo pipefail

addr=${SMOKE_NIC:-0000:00:04.0}
dir=${SMOKE_DIR:?SMOKE_DIR: the directory shared with the host}
wait_s=${SMOKE_WAIT:-300}
log=/tmp/testpmd.log

say() { echo "smoke-guest: $*"; }
up() { cut -d' ' -f1 /proc/uptime; }

say "at $(up) s: kernel $(uname -r), $(nproc) CPUs, DPDK $(dpkg-query -W -f='${Version}' dpdk)"
lspci -nn -s "$addr"
[ "$(cat "/sys/bus/pci/devices/$addr/vendor")" = 0x1af4 ] || { say "no virtio device at $addr"; exit 1; }

hp=$(awk '/^HugePages_Total:/ { print $2 }' /proc/meminfo)
mountpoint -q /dev/hugepages || { say "hugetlbfs not mounted"; exit 1; }
[ "$hp" -ge 64 ] || { say "only $hp hugepages"; exit 1; }
say "hugepages: $hp x $(awk '/^Hugepagesize:/ { print $2 $3 }' /proc/meminfo)"

modprobe vfio-pci
noiommu=$(cat /sys/module/vfio/parameters/enable_unsafe_noiommu_mode)
[ "$noiommu" = Y ] || { say "vfio no-IOMMU mode is '$noiommu'"; exit 1; }
dpdk-devbind.py -b vfio-pci "$addr"
drv=$(basename "$(readlink "/sys/bus/pci/devices/$addr/driver")")
[ "$drv" = vfio-pci ] || { say "$addr is bound to '$drv'"; exit 1; }
say "$addr bound to $drv at $(up) s; /dev/vfio: $(ls /dev/vfio | tr '\n' ' ')"

rm -f "$dir/host-done"
# --stats-period: no "press enter" read of stdin; SIGINT stops it and
# prints the accumulated statistics.
stdbuf -oL -eL dpdk-testpmd -l 0,1 -n 1 -a "$addr" --iova-mode=pa \
	--file-prefix=smoke -- \
	--forward-mode=icmpecho --nb-cores=1 --rxq=1 --txq=1 \
	--total-num-mbufs=4096 --stats-period=30 >"$log" 2>&1 &
pmd=$!

end=$(($(date +%s) + 180))
until grep -q 'icmpecho packet forwarding - ports=' "$log"; do
	if ! kill -0 "$pmd" 2>/dev/null || [ "$(date +%s)" -ge "$end" ]; then
		cat "$log"
		say "testpmd did not start forwarding"
		kill -KILL "$pmd" 2>/dev/null || true
		exit 1
	fi
	sleep 0.5
done
say "SMOKE-TESTPMD-FORWARDING at $(up) s"

end=$(($(date +%s) + wait_s))
until [ -e "$dir/host-done" ] || [ "$(date +%s)" -ge "$end" ]; do
	sleep 0.5
done
[ -e "$dir/host-done" ] || say "no host-done after ${wait_s}s"
kill -INT "$pmd"
rc=0
timeout 60 tail --pid="$pmd" -f /dev/null || { kill -KILL "$pmd"; rc=1; }
wait "$pmd" || true
echo "----- testpmd -----"
cat "$log"
echo "-------------------"

# The accumulated statistics, last block of the log.
rx=$(tr -s ' ' <"$log" | sed -n 's/^ *RX-packets: \([0-9]*\).*/\1/p' | tail -1)
tx=$(tr -s ' ' <"$log" | sed -n 's/.*TX-packets: \([0-9]*\).*/\1/p' | tail -1)
say "testpmd RX-packets=${rx:-?} TX-packets=${tx:-?}"
echo "rx=${rx:-0} tx=${tx:-0}" >"$dir/guest-counts"
[ "${rx:-0}" -gt 0 ] && [ "${tx:-0}" -gt 0 ] || rc=1
exit "$rc"
