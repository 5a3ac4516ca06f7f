#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib_guest.sh: the guest half of dpib_nic.sh (run by the guest's init,
# see lib.sh). The way a user takes dpib to a NIC: dpib-setup binds the
# virtio NIC to vfio-pci (no-IOMMU mode), reports the machine and writes
# the configuration; then unmodified rdma-core and perftest programs run
# on dpib over DPDK's net_virtio PMD, hugepages, DMA-registered MRs and
# zero-copy frames, against the dpib peer on the host's side of the tap.
#
# Each step waits for the host to start its server ($VMX_DIR/ready-STEP),
# runs the client, and leaves its status in $VMX_DIR/done-STEP. TCP (the
# programs' own exchange of QP numbers) goes over QEMU's user network
# (second NIC, kernel driver) to the host's namespace at 10.0.2.2.

set -uo pipefail

build=${DPIB_BUILD:?DPIB_BUILD: the build directory, shared with the host}
dir=${VMX_DIR:?VMX_DIR: the directory shared with the host}
addr=${VMX_NIC:-0000:00:04.0}
ip=${VMX_IP:-192.0.2.12}
conf=/tmp/guest.conf
counters=$dir/guest-counters

say() { echo "dpib-guest: $*"; }
up() { cut -d' ' -f1 /proc/uptime; }

# The user-network NIC (lib.sh's VM_USER_NET, at 0000:00:08.0): the
# programs' TCP.
mgmt_up() {
	local ifc

	modprobe virtio_net
	for ifc in /sys/bus/pci/devices/0000:00:08.0/virtio*/net/*; do
		[ -e "$ifc" ] || continue
		ifc=${ifc##*/}
		ip link set "$ifc" up && ip addr add 10.0.2.15/24 dev "$ifc" &&
			return 0
	done
	return 1
}

# step NAME COMMAND...: wait for the host's server, run the client.
step() {
	local name=$1 rc end
	shift

	end=$(($(date +%s) + 300))
	until [ -e "$dir/ready-$name" ]; do
		if [ "$(date +%s)" -ge "$end" ]; then
			say "host never got $name ready"
			echo 124 >"$dir/done-$name"
			return 1
		fi
		sleep 0.5
	done
	say "$name: $* (at $(up) s)"
	# No private /dev and /sys view (perftest needs none): under TCG its
	# few hundred bind mounts take 20 s.
	DPIB_CONF=$conf DPIB_EXIT_COUNTERS=$counters-$name DPIB_RUN_NS=no \
		timeout 600 "$build/app/dpib-run" "$@" 2>&1 | tee "/tmp/$name.log"
	rc=${PIPESTATUS[0]}
	echo "$rc" >"$dir/done-$name"
	say "$name: status $rc at $(up) s"
	return "$rc"
}

say "at $(up) s: kernel $(uname -r), $(nproc) CPUs"
mgmt_up || { say "no NIC for the user network"; exit 1; }
if [ -n "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ]; then
	say "an IOMMU translates: vfio-pci with its group, IOVA as VA"
	"$build/app/dpib-setup" --bind vfio-pci "$addr" || exit 1
else
	"$build/app/dpib-setup" --bind vfio-pci "$addr" --noiommu || exit 1
fi
"$build/app/dpib-setup" --status
"$build/app/dpib-setup" --write-config "$addr" "$ip" -o "$conf" || exit 1
# Two programs share two vCPUs with QEMU's own threads: the programs'
# calls drive the engine (inline), as the shipped two-process configs do.
sed -i 's/^mode = .*/mode = inline/' "$conf"
cat "$conf"
DPIB_CONF=$conf DPIB_RUN_NS=no "$build/app/dpib-run" ibv_devinfo -v | grep -E 'hca_core_clock|active_mtu'

# -F: perftest times its report with a CPU clock it fits against
# gettimeofday after the transfer; a vCPU preempted then (two programs and
# QEMU on two CPUs) spoils the fit, and without -F the program exits 1
# before its closing exchange, failing its peer too (CI, d3ec28b). With -F
# it reports what it measured and closes.
rc=0
step pingpong ibv_rc_pingpong -d dpib0 -g 0 -n 200 -s 4096 10.0.2.2 ||
	rc=1
step write_bw ib_write_bw -d dpib0 -x 0 -s 65536 -n 300 --report_gbits -F \
	10.0.2.2 || rc=1
step read_bw ib_read_bw -d dpib0 -x 0 -s 65536 -n 300 --report_gbits -b -F \
	10.0.2.2 || rc=1
say "done at $(up) s, status $rc"
exit "$rc"
