# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Copyright(c) 2026 dpib authors
#
# Sourced by the tests that run a program in a QEMU guest whose NIC is a
# virtio-net-pci device for DPDK's net_virtio PMD (vfio-pci, no-IOMMU mode),
# its other end a tap device in a network namespace of the test.
#
# The guest (image.sh): Debian 12, TCG (-accel tcg -cpu max), 2 vCPUs,
# 2 GiB, 256 x 2 MiB hugepages mounted at /dev/hugepages, vfio's unsafe
# no-IOMMU mode allowed. Its PCI devices, at fixed addresses:
#   0000:00:04.0  virtio-net-pci (1af4:1000), MAC $VM_MAC, on the tap
#   0000:00:05.0  virtio-blk-pci, the root disk (snapshot: writes are lost)
#   0000:00:06.0  virtio-9p-pci, $VM_SHARE at the same path
#   0000:00:07.0+ virtio-9p-pci, each of $VM_EXTRA_SHARES at the same path
# The guest runs one script (a path under $VM_SHARE) as root, its output on
# the serial console, and powers off; the console goes to a log file.
#
#   vm_netns_up NETNS TAP [ADDR/PREFIX]   namespace + tap (default
#                                         192.0.2.1/24), removed on exit
#   vm_run NETNS TAP SCRIPT [TIMEOUT]     boot, run, wait: SCRIPT's status
#   vm_start NETNS TAP SCRIPT [TIMEOUT]   the same in the background ...
#   vm_wait_log REGEX [TIMEOUT]           ... wait for a console line ...
#   vm_wait                               ... and for the end: the status
#   vm_cleanup                            kill our qemu, delete our netns
#
# Settings (variables, before the call): VM_SHARE (default: this
# checkout), VM_EXTRA_SHARES (space-separated host directories, e.g. a
# scratch directory for files both sides read), VM_LOG (console log file;
# default a new file under ${TMPDIR:-/tmp}), VM_MEM (MiB, 2048), VM_SMP (2),
# VM_HUGEPAGES (2 MiB pages, 256), VM_APPEND (more kernel parameters),
# VM_ENV (space-separated NAME=VALUE for the script's environment, no
# spaces in values), VM_USER_NET=1 (a second virtio NIC at 0000:00:08.0
# on QEMU's user network: the guest's kernel TCP to the namespace's
# addresses at 10.0.2.2), VM_IOMMU=1 (q35 with an emulated Intel IOMMU,
# 48-bit, translating the NIC's DMA: vfio-pci with a real IOMMU group
# instead of no-IOMMU mode), VM_CACHE (image cache directory), VM_NO_TRAP=1 (the caller's own EXIT
# trap calls vm_cleanup). vm_run/vm_wait return 124 when the timeout
# (default 600 s) killed qemu, 125 when the guest ended without a status.
# Each vm_* reports on stderr.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_SHARE=${VM_SHARE:-$(cd "$VM_DIR/../.." && pwd)}
VM_EXTRA_SHARES=${VM_EXTRA_SHARES:-}
VM_CACHE=${VM_CACHE:-${DPIB_VM_CACHE:-/var/cache/dpib-vm}}
VM_MEM=${VM_MEM:-2048}
VM_SMP=${VM_SMP:-2}
VM_HUGEPAGES=${VM_HUGEPAGES:-256}
VM_APPEND=${VM_APPEND:-}
VM_ENV=${VM_ENV:-}
# shellcheck disable=SC2034 # for the tests that source this file
VM_NIC_ADDR=0000:00:04.0
VM_MAC=52:54:00:00:04:01
VM_LOG=${VM_LOG:-}
VM_IMAGE_DIR=
VM_PID=
VM_TIMEOUT=
VM_STARTED=
VM_NETNS_LIST=()
VM_PIDS=()
VM_TRAP_SET=

vm_say() { echo "vm: $*" >&2; }

# The image directory (built or found by image.sh): rootfs.img, vmlinuz,
# initrd.img.
vm_image() {
	[ -n "$VM_IMAGE_DIR" ] && return 0
	VM_IMAGE_DIR=$(bash "$VM_DIR/image.sh" "$VM_CACHE" | tail -1) &&
		[ -f "$VM_IMAGE_DIR/ok" ] || { vm_say "no guest image"; return 1; }
}

vm_set_trap() {
	[ -n "$VM_TRAP_SET" ] || [ "${VM_NO_TRAP:-0}" = 1 ] && return 0
	trap vm_cleanup EXIT
	trap 'vm_cleanup; exit 130' INT TERM
	VM_TRAP_SET=1
}

# vm_netns_up NETNS TAP [ADDR/PREFIX]: a new namespace holding the tap,
# addressed and up, IPv6 off on it (no router/listener reports on the
# measured link), loopback up. The tap has carrier once qemu opens it.
vm_netns_up() {
	local ns=$1 tap=$2 addr=${3:-192.0.2.1/24}

	vm_set_trap
	ip netns add "$ns" || return 1
	VM_NETNS_LIST+=("$ns")
	ip -n "$ns" link set lo up &&
		ip -n "$ns" tuntap add dev "$tap" mode tap &&
		ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1" &&
		ip -n "$ns" addr add "$addr" dev "$tap" &&
		ip -n "$ns" link set "$tap" up
}

# vm_netns_down NETNS: kill what still runs in it, delete it.
vm_netns_down() {
	local ns=$1 pids i

	pids=$(ip netns pids "$ns" 2>/dev/null || true)
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
		for i in 1 2 3 4 5 6 7 8 9 10; do
			[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	ip netns del "$ns" 2>/dev/null || true
}

vm_cleanup() {
	local p ns i

	# timeout(1) passes TERM on to qemu; KILL what is left after 5 s.
	for p in "${VM_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${VM_PIDS[@]}"; do
		for i in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	VM_PIDS=()
	for ns in "${VM_NETNS_LIST[@]}"; do
		vm_netns_down "$ns"
	done
	VM_NETNS_LIST=()
}

# vm_start NETNS TAP SCRIPT [TIMEOUT]: boot the guest in the background,
# the tap TAP of NETNS as its NIC, SCRIPT (absolute, or relative to
# $VM_SHARE; inside $VM_SHARE) to run. Sets VM_PID and VM_LOG.
vm_start() {
	local ns=$1 tap=$2 script=$3 timeout=${4:-600}
	local mounts i dir append q user_net iommu nic_opts

	case $script in
	/*) ;;
	*) script=$VM_SHARE/$script ;;
	esac
	case $script in
	"$VM_SHARE"/*) ;;
	*) vm_say "$script is not under $VM_SHARE"; return 1 ;;
	esac
	[ -f "$script" ] || { vm_say "no script $script"; return 1; }
	for dir in "$VM_SHARE" $VM_EXTRA_SHARES "$script"; do
		case $dir in
		*[[:space:]]*) vm_say "no spaces in paths: '$dir'"; return 1 ;;
		esac
	done
	vm_image || return 1
	q=$(command -v qemu-system-x86_64) || { vm_say "no qemu-system-x86_64"; return 1; }
	vm_set_trap

	VM_LOG=${VM_LOG:-$(mktemp "${TMPDIR:-/tmp}/dpib-vm.XXXXXX.log")}
	: >"$VM_LOG"
	mounts=(-fsdev "local,id=fs0,path=$VM_SHARE,security_model=none"
		-device "virtio-9p-pci,fsdev=fs0,mount_tag=dpib0,addr=06.0")
	append="dpib.mount=dpib0:$VM_SHARE"
	i=1
	for dir in $VM_EXTRA_SHARES; do
		mounts+=(-fsdev "local,id=fs$i,path=$dir,security_model=none"
			-device "virtio-9p-pci,fsdev=fs$i,mount_tag=dpib$i,addr=$(printf %02x $((6 + i))).0")
		append="$append dpib.mount=dpib$i:$dir"
		i=$((i + 1))
	done
	for i in $VM_ENV; do
		case $i in
		[A-Za-z_]*=*) append="$append dpib.env=$i" ;;
		*) vm_say "VM_ENV: not NAME=VALUE: $i"; return 1 ;;
		esac
	done
	append="console=ttyS0 root=/dev/vda rw init=/sbin/dpib-vm-init panic=-1
		default_hugepagesz=2M hugepagesz=2M hugepages=$VM_HUGEPAGES
		vfio.enable_unsafe_noiommu_mode=1 $append dpib.script=$script
		$VM_APPEND"
	append=$(echo "$append" | tr -s ' \t\n' ' ')

	# VM_IOMMU=1: an emulated Intel IOMMU translating the NIC's DMA (q35),
	# so vfio-pci runs with a real IOMMU group and DPDK with IOVA as VA.
	iommu=()
	nic_opts=
	if [ "${VM_IOMMU:-0}" = 1 ]; then
		iommu=(-machine q35,kernel-irqchip=split
		       -device intel-iommu,intremap=on,caching-mode=on,aw-bits=48)
		nic_opts=,iommu_platform=on,disable-legacy=on
		append=$(echo "$append" |
			 sed 's/vfio.enable_unsafe_noiommu_mode=1/intel_iommu=on/')
	fi
	# A second NIC for the kernel: QEMU's user network, where the guest
	# (10.0.2.15) reaches the namespace's own addresses as 10.0.2.2.
	user_net=()
	[ "${VM_USER_NET:-0}" = 1 ] &&
		user_net=(-netdev user,id=n1,net=10.0.2.0/24
			  -device virtio-net-pci,netdev=n1,addr=08.0)
	vm_say "boot: netns $ns tap $tap script $script timeout ${timeout}s log $VM_LOG"
	VM_STARTED=$(date +%s.%N)
	VM_TIMEOUT=$timeout
	timeout -k 5 "$timeout" ip netns exec "$ns" "$q" \
		-accel tcg -cpu max -smp "$VM_SMP" -m "$VM_MEM" "${iommu[@]}" \
		-nographic -vga none -no-reboot \
		-kernel "$VM_IMAGE_DIR/vmlinuz" -initrd "$VM_IMAGE_DIR/initrd.img" \
		-append "$append" \
		-drive "file=$VM_IMAGE_DIR/rootfs.img,if=none,id=d0,format=raw,snapshot=on" \
		-device virtio-blk-pci,drive=d0,addr=05.0 \
		-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,addr=04.0,mac=$VM_MAC$nic_opts" \
		"${user_net[@]}" "${mounts[@]}" \
		</dev/null >"$VM_LOG" 2>&1 &
	VM_PID=$!
	VM_PIDS+=("$VM_PID")
}

# vm_wait_log REGEX [TIMEOUT]: until a console line matches REGEX (grep -E);
# fails when the guest ends first or after TIMEOUT s (default 300).
vm_wait_log() {
	local re=$1 limit=${2:-300} end

	end=$(($(date +%s) + limit))
	while ! tr -d '\r' <"$VM_LOG" | grep -Eq -- "$re"; do
		if ! kill -0 "$VM_PID" 2>/dev/null; then
			tr -d '\r' <"$VM_LOG" | grep -Eq -- "$re" && return 0
			vm_say "guest ended before /$re/"
			return 1
		fi
		if [ "$(date +%s)" -ge "$end" ]; then
			vm_say "no /$re/ on the console after ${limit}s"
			return 1
		fi
		sleep 0.5
	done
}

# vm_wait: until the guest powers off (or the timeout of vm_start kills
# it); returns the script's status.
vm_wait() {
	local rc st p keep=()

	wait "$VM_PID"
	rc=$?
	for p in "${VM_PIDS[@]}"; do
		[ "$p" = "$VM_PID" ] || keep+=("$p")
	done
	VM_PIDS=("${keep[@]}")
	st=$(tr -d '\r' <"$VM_LOG" | sed -n 's/^VM-EXIT-STATUS=\([0-9]*\)$/\1/p' | tail -1)
	vm_say "guest ended after $(awk -v a="$VM_STARTED" -v b="$(date +%s.%N)" \
		'BEGIN { printf "%.1f", b - a }') s, qemu status $rc, script status ${st:-none} (log $VM_LOG)"
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		vm_say "timeout: qemu killed after ${VM_TIMEOUT}s"
		return 124
	fi
	[ -n "$st" ] || return 125
	return "$st"
}

# vm_run NETNS TAP SCRIPT [TIMEOUT]: boot, run SCRIPT, power off; its
# status (124 timeout, 125 no status), the console in $VM_LOG.
vm_run() {
	vm_start "$@" || return 1
	vm_wait
}
