#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# image.sh [CACHE_DIR]: the Debian 12 guest for the QEMU harness (lib.sh).
#
# Builds, with debootstrap from the host's configured Debian mirror, a root
# filesystem holding the guest kernel, DPDK (the same 22.11 runtime as the
# host's), rdma-core's user programs (ibverbs-utils, perftest) and python3,
# and turns it into a raw ext4 disk image plus the kernel and initrd for a
# direct -kernel boot. PID 1 in the guest is /sbin/dpib-vm-init (written
# below): it mounts the host directories shared over 9p, runs the test's
# script and powers off (the protocol is described above the init script).
#
# Everything lands in CACHE_DIR/<hash of this file>/ (default CACHE_DIR
# /var/cache/dpib-vm): rootfs.img, vmlinuz, initrd.img. A second run with an
# unchanged image.sh finds them and returns at once; a changed image.sh
# builds anew and removes the images of older versions. Progress goes to
# stderr; the last line on stdout is the image directory. DPIB_VM_KEEP=1
# keeps the build directory (the chroot) for a look after a failure.
# Needs root, debootstrap and e2fsprogs (mkfs.ext4 -d), and the mirror.

set -euo pipefail

CACHE_DIR=${1:-${DPIB_VM_CACHE:-/var/cache/dpib-vm}}
SELF=$(readlink -f "${BASH_SOURCE[0]}")
KEY=$(sha256sum "$SELF" | cut -c1-16)
OUT=$CACHE_DIR/$KEY

log() { echo "image.sh: $*" >&2; }

if [ -f "$OUT/ok" ]; then
	log "cached image $OUT"
	echo "$OUT"
	exit 0
fi

[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
for t in debootstrap mkfs.ext4 chroot flock; do
	command -v "$t" >/dev/null || { log "missing $t (apt-get install debootstrap e2fsprogs)"; exit 1; }
done

# The host's Debian mirror (deb822 sources first, then one-line sources).
MIRROR=${DPIB_VM_MIRROR:-}
if [ -z "$MIRROR" ]; then
	MIRROR=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources |
		awk '{print $2}' | grep '/debian/\?$' | head -1 || true)
fi
if [ -z "$MIRROR" ]; then
	MIRROR=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
		awk '{print $2}' | grep '/debian/\?$' | head -1 || true)
fi
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm

# Packages of the guest besides minbase (apt resolves their dependencies).
# dpdk has dpdk-devbind.py and the librte-* libraries; dpdk-testpmd is in
# dpdk-dev (which brings the -dev packages along).
PKGS="linux-image-amd64 initramfs-tools kmod udev iproute2 iputils-ping
pciutils procps dpdk dpdk-dev libisal2 libpci3 ibverbs-utils perftest
python3"

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.lock"
flock -w 1800 9 || { log "cache lock busy"; exit 1; }
if [ -f "$OUT/ok" ]; then	# built by another run while we waited
	echo "$OUT"
	exit 0
fi

start=$(date +%s)
WORK=$(mktemp -d "$CACHE_DIR/build.XXXXXX")
ROOT=$WORK/root
mounted=()

cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[$i]}" 2>/dev/null || true
	done
	if [ "${DPIB_VM_KEEP:-0}" = 1 ]; then
		log "kept $WORK (DPIB_VM_KEEP=1)"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

log "debootstrap $SUITE minbase from $MIRROR into $ROOT"
timeout 1200 debootstrap --variant=minbase --arch=amd64 \
	"$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
	{ tail -20 "$WORK/debootstrap.log" >&2; exit 1; }

# apt in the chroot, with the same Debian suites as the host (not its
# third-party ones), so dpdk is the host's point release.
cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
EOF
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
cat >"$ROOT/usr/sbin/policy-rc.d" <<'EOF'
#!/bin/sh
exit 101
EOF
chmod 755 "$ROOT/usr/sbin/policy-rc.d"

# The initrd must mount a virtio-blk ext4 root (Debian builds these as
# modules); no resume device to wait for.
mkdir -p "$ROOT/etc/initramfs-tools/conf.d"
cat >"$ROOT/etc/initramfs-tools/modules" <<'EOF'
virtio_pci
virtio_blk
ext4
EOF
echo 'RESUME=none' >"$ROOT/etc/initramfs-tools/conf.d/resume"

for m in proc sys dev dev/pts; do
	mkdir -p "$ROOT/$m"
	case $m in
	proc) mount -t proc proc "$ROOT/proc" ;;
	sys) mount -t sysfs sys "$ROOT/sys" ;;
	dev) mount --bind /dev "$ROOT/dev" ;;
	dev/pts) mount -t devpts devpts "$ROOT/dev/pts" ;;
	esac
	mounted+=("$ROOT/$m")
done

PKGS=$(echo "$PKGS" | tr -s ' \n' ' ')
log "apt-get install in the chroot: $PKGS"
# shellcheck disable=SC2086
timeout 1800 chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 sh -c "
	apt-get update -q &&
	apt-get install -y -q --no-install-recommends $PKGS &&
	apt-get clean" >"$WORK/apt.log" 2>&1 ||
	{ tail -30 "$WORK/apt.log" >&2; exit 1; }

kver=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
[ -n "$kver" ] && [ -f "$ROOT/boot/vmlinuz-$kver" ] && [ -f "$ROOT/boot/initrd.img-$kver" ] ||
	{ log "no kernel/initrd in the chroot"; exit 1; }

# Debian's kernels are built without CONFIG_VFIO_NOIOMMU. vfio.ko is
# rebuilt from the same kernel's source (linux-source-6.1, the version of
# the image) with it, and installed under updates/ where modprobe prefers
# it; its exported symbols keep their CRCs (checked), so Debian's
# vfio-pci, vfio_pci_core and vfio_iommu_type1 load on it. It is unsigned:
# loading it taints the kernel (no secure boot in the guest, so it loads).
# The build tools are removed again.
log "vfio.ko with CONFIG_VFIO_NOIOMMU for $kver"
timeout 1200 chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 KVER="$kver" sh -ec '
	src=$(dpkg-query -W -f="\${Version}" linux-image-$KVER)
	tools=
	for t in make xz-utils; do
		dpkg -s $t >/dev/null 2>&1 || tools="$tools $t"
	done
	apt-get install -y -q --no-install-recommends $tools \
		"linux-headers-$KVER=$src" "linux-source-6.1=$src"
	[ -z "$tools" ] || apt-mark auto $tools
	rm -rf /tmp/vfio && mkdir -p /tmp/vfio/src /tmp/vfio/mod
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C /tmp/vfio/src \
		--wildcards "linux-source-6.1/drivers/vfio/*"
	d=/tmp/vfio/src/linux-source-6.1/drivers/vfio
	grep -q "^vfio-y += vfio_main.o" $d/Makefile
	cp $d/vfio_main.c $d/iova_bitmap.c $d/container.c $d/vfio.h /tmp/vfio/mod/
	printf "%s\n" "obj-m := vfio.o" \
		"vfio-y := vfio_main.o iova_bitmap.o container.o" \
		"ccflags-y := -DCONFIG_VFIO_NOIOMMU=1" >/tmp/vfio/mod/Kbuild
	make -C /lib/modules/$KVER/build M=/tmp/vfio/mod modules
	awk "\$3 ~ /drivers\/vfio\/vfio\$/ { print \$2, \$1 }" \
		/usr/src/linux-headers-$KVER/Module.symvers | sort >/tmp/vfio/crc.debian
	awk "{ print \$2, \$1 }" /tmp/vfio/mod/Module.symvers | sort >/tmp/vfio/crc.new
	test -s /tmp/vfio/crc.new
	cmp /tmp/vfio/crc.debian /tmp/vfio/crc.new
	mkdir -p /lib/modules/$KVER/updates/dpib
	install -m 644 /tmp/vfio/mod/vfio.ko /lib/modules/$KVER/updates/dpib/vfio.ko
	depmod -a $KVER
	apt-get purge -y -q --autoremove "linux-headers-$KVER" linux-source-6.1
	apt-get clean
	rm -rf /tmp/vfio /usr/src/linux-source-6.1.tar.xz' >"$WORK/vfio.log" 2>&1 ||
	{ tail -30 "$WORK/vfio.log" >&2; exit 1; }

for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
	umount "${mounted[$i]}"
done
mounted=()

rm -f "$ROOT/usr/sbin/policy-rc.d"
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc/* \
	"$ROOT"/usr/share/man/* "$ROOT"/usr/share/locale/*
echo "nameserver 127.0.0.1" >"$ROOT/etc/resolv.conf"	# no network in tests
echo dpib-vm >"$ROOT/etc/hostname"
echo "127.0.0.1 localhost dpib-vm" >"$ROOT/etc/hosts"
echo "/dev/vda / ext4 rw,relatime 0 1" >"$ROOT/etc/fstab"
mkdir -p "$ROOT/dev/hugepages"

# PID 1. The kernel command line tells it what to run:
#   dpib.mount=TAG:DIR  mount the 9p tag TAG at DIR (repeatable; the first
#                       one holds the script)
#   dpib.env=NAME=VALUE put NAME in the script's environment (repeatable)
#   dpib.script=PATH    run PATH as root, in the first DIR, with stdout and
#                       stderr on the console (ttyS0) and stdin /dev/null
#                       (bash PATH when PATH is not executable); its
#                       environment also has VM_SHARES (the DIRs)
# then it prints "VM-EXIT-STATUS=N" (N = the script's exit status; 254 if a
# share cannot be mounted, 253 if the script is missing) and powers off.
# Hugepages (sized on the command line) are mounted at /dev/hugepages,
# /tmp and /run are tmpfs, the loopback is up, nothing else runs.
cat >"$ROOT/sbin/dpib-vm-init" <<'EOF'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

mnt() { mountpoint -q "$3" || mount -t "$1" "$2" "$3"; }
mnt proc proc /proc
mnt sysfs sys /sys
mnt devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /dev/hugepages
mnt devpts devpts /dev/pts
mnt tmpfs tmpfs /dev/shm
mnt tmpfs tmpfs /run
mnt tmpfs tmpfs /tmp
mnt hugetlbfs hugetlbfs /dev/hugepages
mount -o remount,rw / 2>/dev/null
hostname dpib-vm
ip link set lo up
echo "VM-INIT: up after $(cut -d' ' -f1 /proc/uptime) s"

mounts=; script=
for a in $(cat /proc/cmdline); do
	case $a in
	dpib.mount=*:*) mounts="$mounts ${a#dpib.mount=}" ;;
	dpib.script=*) script=${a#dpib.script=} ;;
	dpib.env=?*=*) export "${a#dpib.env=}" ;;
	esac
done

rc=0; first=; VM_SHARES=
modprobe -a 9pnet_virtio 9p
for m in $mounts; do
	tag=${m%%:*}; dir=${m#*:}
	first=${first:-$dir}
	VM_SHARES="${VM_SHARES:+$VM_SHARES }$dir"
	if ! { mkdir -p "$dir" && mount -t 9p \
		-o trans=virtio,version=9p2000.L,msize=512000,access=any \
		"$tag" "$dir"; }; then
		echo "VM-INIT: cannot mount 9p tag $tag at $dir"
		rc=254
	fi
done
export VM_SHARES
if [ "$rc" = 0 ]; then
	if [ -n "$script" ] && [ -f "$script" ]; then
		echo "VM-SCRIPT-START: $script at $(cut -d' ' -f1 /proc/uptime) s"
		(cd "${first:-/}" && if [ -x "$script" ]; then exec "$script"
			else exec bash "$script"; fi) </dev/null
		rc=$?
	else
		echo "VM-INIT: no script '$script'"
		rc=253
	fi
fi
sync
for m in $mounts; do umount "${m#*:}" 2>/dev/null; done
echo "VM-EXIT-STATUS=$rc"
echo o >/proc/sysrq-trigger
sleep 10
echo b >/proc/sysrq-trigger	# qemu runs with -no-reboot: exits
sleep 1000
EOF
chmod 755 "$ROOT/sbin/dpib-vm-init"

chroot "$ROOT" lsinitramfs "/boot/initrd.img-$kver" >"$WORK/initrd.list"
for m in virtio_blk virtio_pci ext4; do
	# a module in the initrd, or built into the kernel
	if ! grep -q "/$m.ko" "$WORK/initrd.list" &&
		! grep -q "/$m.ko" "$ROOT/lib/modules/$kver/modules.builtin"; then
		log "initrd lacks $m"
		exit 1
	fi
done
for m in 9p 9pnet_virtio vfio-pci; do
	chroot "$ROOT" modinfo -k "$kver" "$m" >/dev/null 2>&1 ||
		grep -q "/${m//-/_}.ko\|/$m.ko" "$ROOT/lib/modules/$kver/modules.builtin" ||
		{ log "guest kernel lacks $m"; exit 1; }
done
chroot "$ROOT" modinfo -k "$kver" -p vfio | grep -q '^enable_unsafe_noiommu_mode' ||
	{ log "guest vfio lacks no-IOMMU mode"; exit 1; }

mkdir -p "$WORK/out"
cp "$ROOT/boot/vmlinuz-$kver" "$WORK/out/vmlinuz"
cp "$ROOT/boot/initrd.img-$kver" "$WORK/out/initrd.img"
dpdk_ver=$(chroot "$ROOT" dpkg-query -W -f='${Version}' dpdk)

used_mb=$(du -sm "$ROOT" | cut -f1)
size_mb=$((used_mb + used_mb / 4 + 512))
log "ext4 image: ${size_mb} MiB for ${used_mb} MiB of files"
mkfs.ext4 -q -F -L dpib-vm -d "$ROOT" "$WORK/out/rootfs.img" "${size_mb}M" >/dev/null

cat >"$WORK/out/info" <<EOF
kernel=$kver
dpdk=$dpdk_ver
mirror=$MIRROR
built=$(date -u +%FT%TZ)
EOF
touch "$WORK/out/ok"
rm -rf "$OUT"
mv "$WORK/out" "$OUT"
# Images of other versions of this script.
for d in "$CACHE_DIR"/*/; do
	d=${d%/}
	[ "$d" = "$OUT" ] || [ ! -f "$d/ok" ] || rm -rf "$d"
done
log "built $OUT (kernel $kver, dpdk $dpdk_ver) in $(($(date +%s) - start)) s"
echo "$OUT"
