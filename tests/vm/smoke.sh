#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# smoke.sh: proves the VM harness (lib.sh). A network namespace holds a
# tap (192.0.2.1/24); the guest binds its virtio-net-pci NIC (0000:00:04.0)
# to vfio-pci in no-IOMMU mode and runs DPDK's testpmd on it in icmpecho
# mode (smoke_guest.sh); the host pings 192.0.2.2 from the namespace.
# Passes when the echo replies come back from the guest NIC's MAC, the tap
# counted frames both ways, and testpmd counted them too.
# Needs root, qemu-system-x86_64, python3 (the pinger); builds the guest
# image on first use (image.sh, a few minutes). SMOKE_PINGS (default 10).

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
VM_NO_TRAP=1
# shellcheck source=lib.sh
. "$here/lib.sh"

ns=dpibvm-smoke-$$
tap=dpibtap0
host_ip=192.0.2.1
guest_ip=192.0.2.2
pings=${SMOKE_PINGS:-10}
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/dpib-vm-smoke.XXXXXX")
chmod 777 "$scratch"
finish() {
	vm_cleanup
	rm -rf "$scratch"
}
trap finish EXIT
trap 'finish; exit 130' INT TERM

t0=$(now)
tb=$(now)
vm_image
echo "# image ready in $(since "$tb") s: $VM_IMAGE_DIR ($(tr '\n' ' ' <"$VM_IMAGE_DIR/info"))"

vm_netns_up "$ns" "$tap" "$host_ip/24"
VM_EXTRA_SHARES=$scratch
VM_ENV="SMOKE_DIR=$scratch SMOKE_WAIT=300"
VM_LOG=${SMOKE_LOG:-$scratch/console.log}
tb=$(now)
vm_start "$ns" "$tap" tests/vm/smoke_guest.sh 900

# stats NAME: one counter of the tap.
stats() { ip netns exec "$ns" cat "/sys/class/net/$tap/statistics/$1"; }

if vm_wait_log '^VM-SCRIPT-START' 300; then
	ok "guest booted and started its script in $(since "$tb") s"
else
	fail "guest did not start its script"
fi
if vm_wait_log 'SMOKE-TESTPMD-FORWARDING' 400; then
	ok "testpmd forwarding on the vfio-pci NIC $(since "$tb") s after boot"
	rx0=$(stats rx_packets) tx0=$(stats tx_packets)
	tp=$(now)
	got=$(ip netns exec "$ns" timeout 120 python3 - "$guest_ip" "$pings" <<'EOF' || echo 0
# ICMP echo from the namespace: count the replies from the guest.
import os, socket, struct, sys, time

dst, count = sys.argv[1], int(sys.argv[2])

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF

s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident = os.getpid() & 0xFFFF
replies = set()
for seq in range(1, count + 1):
    payload = b"dpib-vm-smoke-%04d" % seq
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    pkt = struct.pack("!BBHHH", 8, 0, csum(hdr + payload), ident, seq) + payload
    sent = time.monotonic()
    s.sendto(pkt, (dst, 0))
    s.settimeout(5.0)
    while time.monotonic() - sent < 5.0:
        try:
            data, src = s.recvfrom(2048)
        except socket.timeout:
            break
        ihl = (data[0] & 0xF) * 4
        t, c, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if src[0] == dst and t == 0 and rid == ident and data[ihl + 8:] == payload:
            replies.add(rseq)
            print("# reply seq=%d from %s in %.1f ms" % (rseq, dst,
                  (time.monotonic() - sent) * 1000), file=sys.stderr)
            break
    time.sleep(0.2)
print(len(replies))
EOF
	)
	echo "# $pings pings in $(since "$tp") s"
	rx1=$(stats rx_packets) tx1=$(stats tx_packets)
	if [ "$got" -eq "$pings" ]; then
		ok "$got/$pings ICMP echo replies from $guest_ip (testpmd icmpecho)"
	else
		fail "$got/$pings ICMP echo replies from $guest_ip"
	fi
	mac=$(ip -n "$ns" neigh show "$guest_ip" dev "$tap" | awk '{ print $3 }')
	if [ "$mac" = "$VM_MAC" ]; then
		ok "ARP answered with the guest NIC's MAC $mac"
	else
		fail "ARP entry of $guest_ip is '$mac', not $VM_MAC"
	fi
	if [ $((tx1 - tx0)) -ge "$pings" ] && [ $((rx1 - rx0)) -ge "$pings" ]; then
		ok "tap counted $((tx1 - tx0)) frames to and $((rx1 - rx0)) from the guest"
	else
		fail "tap counted $((tx1 - tx0)) frames to and $((rx1 - rx0)) from the guest"
	fi
else
	fail "testpmd did not start forwarding"
fi
touch "$scratch/host-done"

tw=$(now)
rc=0
vm_wait || rc=$?
echo "# guest powered off $(since "$tw") s after host-done"
if [ "$rc" = 0 ]; then
	ok "guest script passed ($(cat "$scratch/guest-counts" 2>/dev/null))"
else
	fail "guest script status $rc"
fi
if [ "$failed" -ne 0 ]; then
	echo "# console log (last 100 lines):"
	tr -d '\r' <"$VM_LOG" | tail -100 | sed 's/^/#   /'
	cp "$VM_LOG" "${TMPDIR:-/tmp}/dpib-vm-smoke-console.log" 2>/dev/null &&
		echo "# console log kept in ${TMPDIR:-/tmp}/dpib-vm-smoke-console.log"
fi
echo "# smoke total $(since "$t0") s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
