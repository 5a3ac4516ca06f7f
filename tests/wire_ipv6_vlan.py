#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
"""The IPv6/VLAN capture of test_ipv6_vlan judged outside dpib's C code.

- scapy dissects every frame: 802.1Q tag with VID 100, then IPv4 or IPv6,
  UDP 4791 and a BTH.
- The ICRC (IBA A17.3.3) of IPv4 frames is recomputed by
  scapy.contrib.roce; scapy 2.5 has no IPv6 ICRC, so for IPv6 frames the
  masked pseudo packet is built by roce_judge.icrc_ipv6 (8 bytes of ones,
  IPv6 header with traffic class, flow label and hop limit as ones, UDP
  checksum as ones, BTH byte 4 as ones) and hashed with zlib's CRC-32.
- tshark dissects the IPv6 frames as InfiniBand without malformed packets.

Usage: wire_ipv6_vlan.py BUILD_TESTS_DIR SOURCE_TESTS_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

from roce_judge import icrc_ipv6, scapy_or_skip

rdpcap, Dot1Q, IP, IPv6, UDP, BTH = scapy_or_skip(
    "scapy.all.rdpcap", "scapy.all.Dot1Q", "scapy.all.IP", "scapy.all.IPv6",
    "scapy.all.UDP", "scapy.contrib.roce.BTH")

VID = 100


def main():
    build, src = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="dpib-v6vlan-")
    failed = 0
    try:
        cap = os.path.join(tmp, "v6vlan.pcap")
        env = dict(os.environ, DPIB_CONF=os.path.join(src, "conf",
                                                      "ipv6_vlan.conf"),
                   DPIB_CAPTURE=cap)
        p = subprocess.run([os.path.join(build, "test_ipv6_vlan")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
        if p.returncode != 0:
            print(p.stdout.decode(errors="replace"))
            print("FAIL: test_ipv6_vlan exited %d" % p.returncode)
            return 1
        n6 = n4 = 0
        for i, pkt in enumerate(rdpcap(cap), 1):
            raw = bytes(pkt)
            if Dot1Q not in pkt or pkt[Dot1Q].vlan != VID:
                print("FAIL: frame %d is not tagged VID %d" % (i, VID))
                failed += 1
                continue
            if IPv6 in pkt and UDP in pkt:
                ip6 = raw[18:18 + 40 + pkt[IPv6].plen]
                if BTH not in pkt or pkt[UDP].dport != 4791:
                    print("FAIL: frame %d: no BTH over IPv6" % i)
                    failed += 1
                elif icrc_ipv6(ip6) != ip6[-4:]:
                    print("FAIL: frame %d: IPv6 ICRC %s, want %s"
                          % (i, ip6[-4:].hex(), icrc_ipv6(ip6).hex()))
                    failed += 1
                n6 += 1
            elif IP in pkt and UDP in pkt:
                bth = pkt[BTH]
                want = bth.compute_icrc(None)
                got = raw[18 + pkt[IP].len - 4:18 + pkt[IP].len]
                if got != want:
                    print("FAIL: frame %d: IPv4 ICRC %s, scapy %s"
                          % (i, got.hex(), want.hex()))
                    failed += 1
                n4 += 1
        print("%d IPv6 and %d IPv4 RoCEv2 frames on VLAN %d" % (n6, n4, VID))
        if n6 < 10 or n4 < 10:
            print("FAIL: too few frames")
            failed += 1
        tshark = shutil.which("tshark")
        if tshark:
            out = subprocess.run([tshark, "-r", cap, "-Y", "ipv6 && udp",
                                  "-T", "fields", "-e", "frame.protocols"],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL).stdout.decode()
            lines = [l for l in out.splitlines() if l]
            bad = [l for l in lines if "infiniband" not in l or
                   "malformed" in l]
            if not lines or bad:
                print("FAIL: tshark: %d IPv6 frames, %d not InfiniBand"
                      % (len(lines), len(bad)))
                failed += 1
            else:
                print("tshark: %d IPv6 frames dissected as InfiniBand"
                      " (it flags the zero UDP checksum, as sent)"
                      % len(lines))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS" if failed == 0 else "%d failures" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
