#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib-setup on a fixture machine (tests/setup): an lspci -x dump with three
# kinds of NIC and a storage function, and a /sys and /proc tree. Each case
# runs on a fresh copy of the tree and checks what the tool printed and what
# it wrote where the kernel's files would be: the status report, binding,
# unbinding, refusals, hugepages, the configuration, and that --dry-run
# writes nothing.
#
# Usage: setup_tool.sh DPIB_SETUP FIXTURE_DIR
set -euo pipefail
tool=$1
fixture=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
root=$dir/root
passed=0
failed=0

pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() {
	echo "FAIL - $1: $2"
	sed 's/^/#   out: /' "$dir/out"
	sed 's/^/#   err: /' "$dir/err"
	failed=$((failed + 1))
}

fresh() { rm -rf "$root"; cp -a "$fixture/root" "$root"; }

# Runs dpib-setup on the fixture; stdout and stderr to files, prints rc.
setup() {
	local rc=0

	"$tool" --root "$root" --pci-dump "$fixture/pci.dump" "$@" \
		>"$dir/out" 2>"$dir/err" || rc=$?
	echo "$rc"
}

dev() { echo "$root/sys/bus/pci/devices/$1"; }
drv() { echo "$root/sys/bus/pci/drivers/$1"; }

# has FILE TEXT: FILE holds TEXT (and a newline, or none).
has() { [ "$(cat "$1")" = "$2" ]; }
# newline FILE: FILE holds one newline: an emptied driver_override.
newline() { cmp -s "$1" <(printf '\n'); }
empty() { [ ! -s "$1" ]; }

# The lines of one status section, heading and rule left out.
section() {
	awk -v t="$1" '$0 == t { f = 1; getline; next } /^$/ { f = 0 } f' \
		"$dir/out"
}

# The two lines of one function in the status.
block() { grep -A1 "^$1 " "$dir/out"; }

# A listing of the tree with each file's content, to see any change.
snapshot() {
	(cd "$root" && find . -printf '%p %l\n' | sort &&
		find . -type f -exec md5sum {} + | sort)
}

check_status() {
	local name=status rc dpdk kernel other

	fresh
	rc=$(setup)
	dpdk=$(section 'Network devices using DPDK-compatible driver')
	kernel=$(section 'Network devices using kernel driver')
	other=$(section 'Other network devices')
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc"
	elif ! grep -q '^0000:03:00\.1 ' <<<"$dpdk" ||
	     [ "$(grep -c '^0000' <<<"$dpdk")" != 1 ]; then
		fail $name "DPDK group is not just 0000:03:00.1"
	elif ! grep -q '^0000:00:03\.0 ' <<<"$kernel" ||
	     ! grep -q '^0000:03:00\.0 ' <<<"$kernel" ||
	     [ "$(grep -c '^0000' <<<"$kernel")" != 2 ]; then
		fail $name "kernel group is not 0000:00:03.0 and 0000:03:00.0"
	elif ! grep -q '^0000:04:00\.0 ' <<<"$other" ||
	     [ "$(grep -c '^0000' <<<"$other")" != 1 ]; then
		fail $name "other group is not just 0000:04:00.0"
	elif grep -q '0000:00:02\.0' "$dir/out"; then
		fail $name "the storage function is listed"
	elif ! block 0000:03:00.0 | grep -q "'82599ES 10-Gigabit SFI/SFP+ Network Connection' \[8086:10fb\] Intel Corporation"; then
		fail $name "no pci.ids names for the 82599"
	elif ! block 0000:00:03.0 | grep -q "'Virtio 1.0 network device' \[1af4:1041\] Red Hat, Inc\."; then
		fail $name "no pci.ids names for virtio-net"
	elif ! block 0000:03:00.0 | grep -q 'drv=ixgbe numa=0 iommu_group=12 if=eth1(up)$'; then
		fail $name "0000:03:00.0: driver, node, group or interface wrong"
	elif ! block 0000:03:00.1 | grep -q 'drv=vfio-pci numa=1 iommu_group=13$'; then
		fail $name "0000:03:00.1: driver, node or group wrong"
	elif ! block 0000:04:00.0 | grep -q 'drv=none numa=1 iommu_group=14$'; then
		fail $name "0000:04:00.0: driver, node or group wrong"
	elif ! block 0000:00:03.0 | grep -q 'numa=none iommu_group=none if=eth0(up) \*Active\* (eth0: default via 192\.0\.2\.1, and 2 more routes)'; then
		fail $name "eth0 is not shown active with its routes"
	elif [ "$(grep -c 'Active' "$dir/out")" != 1 ]; then
		fail $name "link-local routes made eth1 active"
	elif ! grep -Eq '^2M +all +64 +60$' "$dir/out" ||
	     ! grep -Eq '^2M +1 +0 +0$' "$dir/out" ||
	     ! grep -Eq '^1G +0 +0 +0$' "$dir/out"; then
		fail $name "hugepage rows wrong"
	elif ! grep -q '^hugetlbfs mounted on /mnt/huge-1G, pagesize 1G$' "$dir/out"; then
		fail $name "the 1G hugetlbfs mount is not shown"
	elif ! grep -q '^IOMMU: 3 groups$' "$dir/out" ||
	     ! grep -q '^no-IOMMU mode: N$' "$dir/out" ||
	     ! grep -q '^DPDK-compatible drivers loaded: vfio-pci$' "$dir/out"; then
		fail $name "VFIO state wrong"
	else
		pass $name
	fi
}

check_bind() {
	local name=bind rc a=0000:03:00.0

	fresh
	rc=$(setup --bind vfio-pci 03:00.0)
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc"
	elif ! has "$(dev $a)/driver_override" vfio-pci; then
		fail $name "driver_override is not vfio-pci"
	elif ! has "$(drv ixgbe)/unbind" $a; then
		fail $name "not unbound from ixgbe"
	elif ! has "$root/sys/bus/pci/drivers_probe" $a; then
		fail $name "not reprobed"
	elif grep -q modprobe "$dir/out"; then
		fail $name "modprobe for a loaded driver"
	else
		pass $name
	fi
	# By interface name, as dpdk-devbind.py takes it too.
	name=bind_by_interface
	fresh
	rc=$(setup -b vfio-pci eth1)
	if [ "$rc" != 0 ] || ! has "$(dev $a)/driver_override" vfio-pci; then
		fail $name "eth1 did not name 0000:03:00.0 (exit $rc)"
	else
		pass $name
	fi
	name=bind_already
	fresh
	rc=$(setup -b vfio-pci 0000:03:00.1)
	if [ "$rc" != 0 ] || ! grep -q 'already bound to vfio-pci' "$dir/out" ||
	   ! empty "$(drv vfio-pci)/unbind" ||
	   ! empty "$root/sys/bus/pci/drivers_probe"; then
		fail $name "rebound a function already on vfio-pci (exit $rc)"
	else
		pass $name
	fi
	name=bind_modprobe
	fresh
	rc=$(setup -b uio_pci_generic 0000:04:00.0)
	if [ "$rc" != 0 ] ||
	   ! grep -q '^not run under --root: modprobe uio_pci_generic$' "$dir/out" ||
	   ! has "$(dev 0000:04:00.0)/driver_override" uio_pci_generic ||
	   ! has "$root/sys/bus/pci/drivers_probe" 0000:04:00.0; then
		fail $name "no modprobe shown, or not bound (exit $rc)"
	else
		pass $name
	fi
}

check_routed() {
	local name=routed_refused rc a=0000:00:03.0

	fresh
	rc=$(setup -b vfio-pci $a)
	if [ "$rc" = 0 ]; then
		fail $name "a NIC carrying routes was bound without --force"
	elif ! grep -q "$a: its interface eth0 carries route default via 192.0.2.1 and more.*--force" "$dir/err"; then
		fail $name "the message names no interface, route or --force"
	elif ! empty "$(dev $a)/driver_override" ||
	     ! empty "$(drv virtio-pci)/unbind"; then
		fail $name "files were written anyway"
	else
		pass $name
	fi
	name=routed_force
	fresh
	rc=$(setup -b vfio-pci --force $a)
	if [ "$rc" != 0 ] || ! has "$(dev $a)/driver_override" vfio-pci ||
	   ! has "$(drv virtio-pci)/unbind" $a ||
	   ! grep -q 'going on (--force)' "$dir/out"; then
		fail $name "--force did not bind it, or said nothing (exit $rc)"
	else
		pass $name
	fi
	name=routed_unbind_refused
	fresh
	rc=$(setup -u $a)
	if [ "$rc" = 0 ] || ! grep -q 'eth0 carries route' "$dir/err" ||
	   ! empty "$(drv virtio-pci)/unbind"; then
		fail $name "a NIC carrying routes was unbound (exit $rc)"
	else
		pass $name
	fi
}

check_unbind() {
	local name=unbind rc a=0000:03:00.1

	fresh
	rc=$(setup --unbind $a)
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc"
	elif ! newline "$(dev $a)/driver_override"; then
		fail $name "driver_override not cleared"
	elif ! has "$(drv vfio-pci)/unbind" $a; then
		fail $name "not unbound from vfio-pci"
	elif ! has "$root/sys/bus/pci/drivers_probe" $a; then
		fail $name "not reprobed"
	else
		pass $name
	fi
}

check_iommu() {
	local name=noiommu_refused rc a=0000:04:00.0
	local mode=$root/sys/module/vfio/parameters/enable_unsafe_noiommu_mode

	fresh
	rm -r "$root"/sys/kernel/iommu_groups/*
	rc=$(setup -b vfio-pci $a)
	if [ "$rc" = 0 ]; then
		fail $name "bound to vfio-pci without an IOMMU or --noiommu"
	elif ! grep -q 'no IOMMU.*--noiommu.*no DMA protection' "$dir/err"; then
		fail $name "the message does not name --noiommu and its cost"
	elif ! empty "$(dev $a)/driver_override" || ! has "$mode" N; then
		fail $name "files were written anyway"
	else
		pass $name
	fi
	name=noiommu
	rc=$(setup -b vfio-pci --noiommu $a)
	if [ "$rc" != 0 ] || ! has "$mode" Y ||
	   ! has "$(dev $a)/driver_override" vfio-pci ||
	   ! grep -q 'WARNING: .*no DMA protection' "$dir/err"; then
		fail $name "no-IOMMU mode not set, NIC not bound or no warning (exit $rc)"
	else
		pass $name
	fi
	name=noiommu_not_needed
	fresh
	rc=$(setup -b vfio-pci --noiommu $a)
	if [ "$rc" != 0 ] || ! has "$mode" N ||
	   ! grep -q 'not applied' "$dir/out"; then
		fail $name "no-IOMMU mode set on a machine with an IOMMU (exit $rc)"
	else
		pass $name
	fi
}

check_hugepages() {
	local name=hugepages rc hp=$root/sys/kernel/mm/hugepages

	fresh
	rc=$(setup --hugepages 128)
	if [ "$rc" != 0 ] || ! has "$hp/hugepages-2048kB/nr_hugepages" 128; then
		fail $name "nr_hugepages not 128 (exit $rc)"
	elif ! grep -q '^2M hugepages: asked for 128, the kernel gave 128 (256 MiB)$' "$dir/out"; then
		fail $name "the kernel's answer is not reported"
	elif ! grep -q '^not run under --root: mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages$' "$dir/out"; then
		fail $name "no mount of a 2M hugetlbfs shown"
	else
		pass $name
	fi
	name=hugepages_1G_mounted
	fresh
	rc=$(setup --hugepages 2 -p 1G)
	if [ "$rc" != 0 ] || ! has "$hp/hugepages-1048576kB/nr_hugepages" 2 ||
	   ! grep -q 'already mounted on /mnt/huge-1G' "$dir/out" ||
	   grep -q 'mount -t' "$dir/out"; then
		fail $name "1G pages not reserved, or mounted twice (exit $rc)"
	else
		pass $name
	fi
	name=hugepages_node
	fresh
	rc=$(setup --hugepages 16,2M --node 1)
	if [ "$rc" != 0 ] ||
	   ! has "$root/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages" 16 ||
	   ! has "$hp/hugepages-2048kB/nr_hugepages" 64; then
		fail $name "node 1's pool not set, or the global one changed (exit $rc)"
	else
		pass $name
	fi
	name=hugepages_bad_size
	fresh
	rc=$(setup --hugepages 4,4M)
	if [ "$rc" = 0 ] || ! grep -q 'no 4M hugepages.*sizes there are 2M 1G' "$dir/err"; then
		fail $name "a size the kernel lacks was accepted, or the sizes not listed (exit $rc)"
	else
		pass $name
	fi
}

# Every line a comment, a section or key = value, and the keys expected.
config_ok() {	# FILE ADDR IPKEY IP MTU
	! grep -Ev '^(#.*|\[(eal|engine|device dpib0)\]|[a-z_0-9]+ =( .*)?|)$' "$1" >/dev/null &&
	[ "$(grep -c '^\[' "$1")" = 3 ] &&
	grep -qx "port = $2" "$1" && grep -qx "$3 = $4" "$1" &&
	grep -qx "mtu = $5" "$1" && grep -qx 'hugepages = yes' "$1" &&
	[ "$(sed -n '/^\[device dpib0\]/,$p' "$1" | grep -c '^port = ')" = 1 ]
}

check_config() {
	local name=write_config rc

	fresh
	rc=$(setup -w 03:00.0 192.0.2.10)
	if [ "$rc" != 0 ] || ! config_ok "$dir/out" 0000:03:00.0 ip 192.0.2.10 9000; then
		fail $name "not a configuration for 0000:03:00.0 with eth1's MTU (exit $rc)"
	else
		pass $name
	fi
	name=write_config_file
	rc=$(setup --write-config 0000:04:00.0 2001:db8::10 -o "$dir/dpib.conf")
	if [ "$rc" != 0 ] || [ ! -f "$dir/dpib.conf" ] ||
	   ! config_ok "$dir/dpib.conf" 0000:04:00.0 ip6 2001:db8::10 1500; then
		fail $name "no IPv6 configuration with MTU 1500 in the file (exit $rc)"
	else
		pass $name
	fi
	name=write_config_bad_ip
	rc=$(setup -w 0000:04:00.0 192.0.2.300)
	if [ "$rc" = 0 ] || ! grep -q "'192.0.2.300' is not an IP address" "$dir/err"; then
		fail $name "a bad IP was accepted (exit $rc)"
	else
		pass $name
	fi
}

check_dry_run() {
	local name=dry_run rc before after

	fresh
	rm -r "$root"/sys/kernel/iommu_groups/*
	before=$(snapshot)
	rc=$(setup -n -b vfio-pci --force --noiommu 0000:00:03.0 0000:03:00.0)
	after=$(snapshot)
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc"
	elif [ "$before" != "$after" ]; then
		fail $name "--bind -n changed the tree"
	elif ! grep -q "^would write 'vfio-pci' to $(dev 0000:03:00.0)/driver_override$" "$dir/out" ||
	     ! grep -q "^would write '0000:00:03.0' to $(dev 0000:00:03.0)/driver/unbind$" "$dir/out" ||
	     ! grep -q "^would write 'Y' to .*enable_unsafe_noiommu_mode$" "$dir/out" ||
	     ! grep -q "^would write '0000:03:00.0' to $root/sys/bus/pci/drivers_probe$" "$dir/out"; then
		fail $name "the actions are not all shown"
	else
		rc=$(setup -n -u 0000:03:00.1)
		rc=$rc$(setup -n --hugepages 512)
		after=$(snapshot)
		if [ "$rc" != 00 ] || [ "$before" != "$after" ] ||
		   ! grep -q "^would write '512' to .*/hugepages-2048kB/nr_hugepages$" "$dir/out" ||
		   ! grep -q '^would run mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages$' "$dir/out"; then
			fail $name "--unbind or --hugepages -n changed the tree or said nothing"
		else
			pass $name
		fi
	fi
}

# refused NAME PATTERN ARGS...: a non-zero exit, a message naming a fix.
refused() {
	local name=$1 pattern=$2 rc
	shift 2

	fresh
	rc=$(setup "$@")
	if [ "$rc" = 0 ]; then
		fail "$name" "accepted"
	elif ! grep -Eq "$pattern" "$dir/err"; then
		fail "$name" "the message does not match '$pattern'"
	elif ! empty "$root/sys/bus/pci/drivers_probe"; then
		fail "$name" "files were written anyway"
	else
		pass "$name"
	fi
}

check_status
check_bind
check_routed
check_unbind
check_iommu
check_hugepages
check_config
check_dry_run
refused bad_address_absent 'no PCI function 0000:09:00\.0 .*--status lists' \
	-b vfio-pci 0000:09:00.0
refused bad_address_syntax 'neither a PCI address .*--status lists' \
	-b vfio-pci 03:00:0
refused bad_address_range 'bus 00-ff, device 00-1f, function 0-7' \
	-u 03:20.0
refused not_a_nic 'no network device .*NICs only' -b vfio-pci 0000:00:02.0
refused unknown_driver "no driver 'nosuch' .*modprobe nosuch.*vfio-pci" \
	-b nosuch 0000:04:00.0
refused no_address 'at least one PCI address' -b vfio-pci
refused bad_pagesize "bad page size '3X'" --hugepages 2,3X

echo "# $passed passed, $failed failed"
[ "$failed" = 0 ]
