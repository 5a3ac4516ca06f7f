#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
"""
Frames from scapy for test_wire_inject, and the check of dpib's answers.

    wire_inject.py gen CONTRACT FRAMES.pcap FRAMES.txt
    wire_inject.py check CONTRACT DPIB_TX.pcap

The contract is a flat JSON object written by test_wire_inject (C):

    dev_mac, dev_ip   the device (dpib0): frames are addressed to it
    ud_qpn, ud_qkey   a UD QP in RTS with receive WQEs posted
    rc_qpn            an RC QP in RTR: rq_psn 0, dest QP rc_dest_qpn,
    rc_dest_qpn       path MTU rc_mtu, remote write access; its two receive
    rc_mtu            WQEs take the SENDs
    init_qpn          an RC QP left in INIT
    free_qpn          a QPN no QP has
    mr_addr, mr_rkey  a registered buffer (remote write) ...
    write_off         ... and where in it the RDMA WRITEs go
    mw_qpn            an RC QP in RTS (rq_psn 0 at each new connection),
    mw_dest_qpn       dest QP mw_dest_qpn: ATOMIC WRITE, memory window and
                      SEND with Invalidate cases
    aw_off            where in the buffer the ATOMIC WRITEs go
    win_off           a type 1 window over the buffer from win_off, bound
    win_rkey_old      twice: its rkey from the first bind (stale) and ...
    win_rkey_new      ... from the second

gen writes FRAMES.pcap (Ethernet) and FRAMES.txt, one line per frame in
the same order: "NAME MSG_LEN SEED". Payload byte i of a message with seed
s is (s + 7 * i + (i >> 8)) mod 256; a multi-packet message is cut at
rc_mtu. Pad bytes are zero. The ICRC is scapy.contrib.roce's.

check dissects what dpib sent (DPIB_CAPTURE) with tshark and scapy: exactly
the answers listed in ANSWERS, each an ACKNOWLEDGE (never an ATOMIC
ACKNOWLEDGE) to its QP, with valid ICRCs and the header conventions of rxe.
Exit status 77 means a tool is missing.
"""
import json
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from roce_judge import scapy_or_skip  # noqa: E402

Ether, IP, UDP, Raw, raw, PcapWriter, RawPcapReader, BTH = scapy_or_skip(
    "scapy.layers.l2.Ether", "scapy.layers.inet.IP", "scapy.layers.inet.UDP",
    "scapy.packet.Raw", "scapy.compat.raw", "scapy.utils.PcapWriter",
    "scapy.utils.RawPcapReader", "scapy.contrib.roce.BTH")
import wire_dissect as wd  # noqa: E402

PEER_MAC = "02:00:00:00:00:02"
# The peer speaks from the device's own address: RC and UC QPs take frames
# only from the address their path names, and the C side connects them to
# the device itself (its GID 0).
PEER_QPN = 0x77            # DETH source QP of the UD frames
PEER_SPORT = 0xc0de
UD_QKEY_WRONG = 0x22222222
PKEY_OTHER = 0x1234        # another partition: no match with 0xffff
OPCODE_RESERVED = 0x1e     # RC opcodes 0x18-0x1f are reserved

# RC PSNs: the valid requests take 0..3; every bad frame uses 4, the next
# expected PSN, so that only its defect can stop it.
PSN_SEND_ONLY, PSN_SEND_FIRST, PSN_SEND_LAST, PSN_WRITE = 0, 1, 2, 3
PSN_NEXT = 4
# The window QP: an ATOMIC WRITE and its duplicate at 0, WRITEs through the
# window's new and old rkeys at 1 and 2; after each NAK a new connection
# starts at 0 again.
PSN_AW, PSN_WIN_NEW, PSN_WIN_OLD = 0, 1, 2
NAK_INVALID, NAK_ACCESS = 0x61, 0x62

# What dpib must answer, in order: (what, the contract's QPN the answer goes
# to, PSN, AETH syndrome class or value, MSN). Dropped frames get no answer.
ANSWERS = [
    ("ACK of SEND ONLY", "rc_dest_qpn", PSN_SEND_ONLY, "ACK", 1),
    ("ACK of SEND FIRST+LAST", "rc_dest_qpn", PSN_SEND_LAST, "ACK", 2),
    ("ACK of RDMA WRITE ONLY", "rc_dest_qpn", PSN_WRITE, "ACK", 3),
    ("NAK of RDMA WRITE with a bad rkey", "rc_dest_qpn", PSN_NEXT,
     NAK_ACCESS, 3),
    ("ACK of ATOMIC WRITE", "mw_dest_qpn", PSN_AW, "ACK", 1),
    ("ACK again of the duplicate ATOMIC WRITE", "mw_dest_qpn", PSN_AW,
     "ACK", 1),
    ("ACK of RDMA WRITE with the window's rkey", "mw_dest_qpn", PSN_WIN_NEW,
     "ACK", 2),
    ("NAK of RDMA WRITE with the window's old rkey", "mw_dest_qpn",
     PSN_WIN_OLD, NAK_ACCESS, 2),
    ("NAK of a misaligned ATOMIC WRITE", "mw_dest_qpn", 0, NAK_INVALID, 0),
    ("NAK of an ATOMIC WRITE whose RETH says 4 bytes", "mw_dest_qpn", 0,
     NAK_INVALID, 0),
    ("NAK of SEND with Invalidate of a bogus rkey", "mw_dest_qpn", 0,
     NAK_INVALID, 0),
]


def pattern(n, seed):
    return bytes((seed + 7 * i + (i >> 8)) & 0xff for i in range(n))


def reth(va, rkey, dmalen):
    return struct.pack("!QII", va, rkey, dmalen)


def ieth(rkey):
    return struct.pack("!I", rkey)


def deth(qkey, src_qp):
    return struct.pack("!II", qkey, src_qp)


def roce(c, opcode, dqpn, psn, ext=b"", payload=b"", ackreq=0,
         pkey=0xffff, version=0):
    pad = (-len(payload)) % 4
    return raw(Ether(dst=c["dev_mac"], src=PEER_MAC) /
               IP(src=c["dev_ip"], dst=c["dev_ip"], flags="DF", ttl=64, id=0) /
               UDP(sport=PEER_SPORT, dport=wd.ROCE_PORT, chksum=0) /
               BTH(opcode=opcode, padcount=pad, version=version, pkey=pkey,
                   dqpn=dqpn, ackreq=ackreq, psn=psn) /
               Raw(ext + payload + b"\0" * pad))


def frames(c):
    """[(name, message length, seed, frame bytes)], in injection order."""
    out = []
    ud, rc, mtu = c["ud_qpn"], c["rc_qpn"], c["rc_mtu"]
    wva = c["mr_addr"] + c["write_off"]

    def add(name, n, seed, frame):
        out.append((name, n, seed, frame))

    # UD: a SEND, the same with a wrong Q_Key, a SEND with immediate.
    add("ud_send", 101, 1, roce(c, 0x64, ud, 10, deth(c["ud_qkey"], PEER_QPN),
                                pattern(101, 1)))
    add("ud_bad_qkey", 40, 2, roce(c, 0x64, ud, 11,
                                   deth(UD_QKEY_WRONG, PEER_QPN),
                                   pattern(40, 2)))
    add("ud_send_imm", 64, 3, roce(c, 0x65, ud, 12,
                                   deth(c["ud_qkey"], PEER_QPN) +
                                   struct.pack("!I", 0xfeedf00d),
                                   pattern(64, 3)))
    # RC: SEND ONLY, SEND FIRST + LAST, RDMA WRITE ONLY.
    add("rc_send_only", 64, 4, roce(c, 0x04, rc, PSN_SEND_ONLY,
                                    payload=pattern(64, 4), ackreq=1))
    msg = pattern(mtu + 501, 5)
    add("rc_send_first", len(msg), 5, roce(c, 0x00, rc, PSN_SEND_FIRST,
                                           payload=msg[:mtu]))
    add("rc_send_last", len(msg), 5, roce(c, 0x02, rc, PSN_SEND_LAST,
                                          payload=msg[mtu:], ackreq=1))
    add("rc_write_only", 203, 6, roce(c, 0x0a, rc, PSN_WRITE,
                                      reth(wva, c["mr_rkey"], 203),
                                      pattern(203, 6), ackreq=1))
    # Broken RC frames at the next PSN; each would write 64 bytes.
    good = roce(c, 0x0a, rc, PSN_NEXT, reth(wva + 1024, c["mr_rkey"], 64),
                pattern(64, 7), ackreq=1)
    bad = bytearray(good)
    bad[-1] ^= 0x01
    add("bad_icrc", 64, 7, bytes(bad))
    add("truncated", 0, 0, roce(c, 0x0a, rc, PSN_NEXT,
                                reth(wva + 1024, c["mr_rkey"], 64)[:8],
                                ackreq=1))
    add("bad_pkey", 64, 7, roce(c, 0x0a, rc, PSN_NEXT,
                                reth(wva + 1024, c["mr_rkey"], 64),
                                pattern(64, 7), ackreq=1, pkey=PKEY_OTHER))
    add("bad_tver", 64, 7, roce(c, 0x0a, rc, PSN_NEXT,
                                reth(wva + 1024, c["mr_rkey"], 64),
                                pattern(64, 7), ackreq=1, version=1))
    add("bad_opcode", 64, 7, roce(c, OPCODE_RESERVED, rc, PSN_NEXT,
                                  reth(wva + 1024, c["mr_rkey"], 64),
                                  pattern(64, 7), ackreq=1))
    add("unknown_qpn", 64, 8, roce(c, 0x04, c["free_qpn"], 0,
                                   payload=pattern(64, 8), ackreq=1))
    add("qp_not_ready", 64, 9, roce(c, 0x04, c["init_qpn"], 0,
                                    payload=pattern(64, 9), ackreq=1))
    # Last: a bad rkey is a NAK (remote access error) at PSN_NEXT.
    add("bad_rkey", 64, 7, roce(c, 0x0a, rc, PSN_NEXT,
                                reth(wva + 1024, c["mr_rkey"] ^ 0x5a5a00, 64),
                                pattern(64, 7), ackreq=1))

    # The window QP. ATOMIC WRITE (IBA 1.5): RETH for 8 bytes, 8 bytes.
    mw = c["mw_qpn"]
    ava = c["mr_addr"] + c["aw_off"]
    add("aw_first", 8, 21, roce(c, wd.ATOMIC_WRITE, mw, PSN_AW,
                                reth(ava, c["mr_rkey"], 8), pattern(8, 21),
                                ackreq=1))
    add("aw_duplicate", 8, 22, roce(c, wd.ATOMIC_WRITE, mw, PSN_AW,
                                    reth(ava, c["mr_rkey"], 8),
                                    pattern(8, 22), ackreq=1))
    # The same bytes through the window's current and its stale rkey.
    winva = c["mr_addr"] + c["win_off"] + 64
    add("mw_write_new", 128, 23, roce(c, 0x0a, mw, PSN_WIN_NEW,
                                      reth(winva, c["win_rkey_new"], 128),
                                      pattern(128, 23), ackreq=1))
    add("mw_write_old", 128, 24, roce(c, 0x0a, mw, PSN_WIN_OLD,
                                      reth(winva, c["win_rkey_old"], 128),
                                      pattern(128, 24), ackreq=1))
    # Each at PSN 0 of a new connection.
    add("aw_misaligned", 8, 25, roce(c, wd.ATOMIC_WRITE, mw, 0,
                                     reth(ava + 4, c["mr_rkey"], 8),
                                     pattern(8, 25), ackreq=1))
    # 8 bytes follow, as for every ATOMIC WRITE: only the RETH is wrong.
    add("aw_len4", 8, 26, roce(c, wd.ATOMIC_WRITE, mw, 0,
                               reth(ava, c["mr_rkey"], 4), pattern(8, 26),
                               ackreq=1))
    add("send_inv_bogus", 64, 27, roce(c, 0x17, mw, 0,
                                       ieth(c["mr_rkey"] ^ 0x5a5a00),
                                       pattern(64, 27), ackreq=1))
    return out


def self_check(out):
    """The frames are what they claim to be before dpib sees them."""
    for name, _, _, f in out:
        ip = IP(f[14:])
        ok = ip[BTH].compute_icrc(None) == f[-4:]
        if ok != (name != "bad_icrc"):
            raise SystemExit("generator: ICRC of %s" % name)


def gen(c, pcap, index):
    if shutil.which("tshark") is None:
        print("SKIP: tshark is not installed (needed by check)")
        return 77
    out = frames(c)
    self_check(out)
    with PcapWriter(pcap, linktype=1, sync=True) as w:
        for _, _, _, f in out:
            w.write(f)
    with open(index, "w") as f:
        for name, n, seed, _ in out:
            f.write("%s %d %d\n" % (name, n, seed))
    return 0


def check(c, pcap):
    """dpib's answers: exactly ANSWERS, dissected by tshark and scapy."""
    errors = []
    tframes = wd.tshark(pcap, strict=True)
    raw_frames = [bytes(b) for b, _ in RawPcapReader(pcap)]
    run = wd.Run("inject", "", "", c["rc_mtu"], {})
    a = wd.Analysis(run, tframes, raw_frames)
    a.dissection()
    a.headers()
    for chk in a.checks.values():
        errors += ["%s: %s" % (chk.name, e) for e in chk.errors]
    roce_frames = [f for f in tframes if f["opcode"] is not None]
    if len(roce_frames) != len(ANSWERS):
        errors.append("%d RoCE frames sent, want %d" %
                      (len(roce_frames), len(ANSWERS)))
    for f, (what, dest, psn, syn, msn) in zip(roce_frames, ANSWERS):
        got_cls = (wd.syndrome_class(f["syndrome"])
                   if f["syndrome"] is not None else None)
        ok = (f["opcode"] == 0x11 and f["dqp"] == c[dest] and
              f["psn"] == psn and f["msn"] == msn and
              (got_cls == syn if isinstance(syn, str) else
               f["syndrome"] == syn))
        print("%s %s: frame %d %s QP %#x PSN %d AETH %#x (%s) MSN %s" %
              ("ok" if ok else "FAIL", what, f["no"],
               wd.opname(f["opcode"]), f["dqp"], f["psn"],
               f["syndrome"] or 0, got_cls, f["msn"]))
        if not ok:
            errors.append("%s: want ACKNOWLEDGE to QP %#x PSN %d AETH %s "
                          "MSN %d" % (what, c[dest], psn,
                                      syn if isinstance(syn, str)
                                      else "%#x" % syn, msn))
    for e in errors:
        print("FAIL " + e)
    return 1 if errors else 0


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("gen", "check"):
        print(__doc__)
        return 2
    with open(sys.argv[2]) as f:
        c = json.load(f)
    if sys.argv[1] == "gen" and len(sys.argv) == 5:
        return gen(c, sys.argv[3], sys.argv[4])
    if sys.argv[1] == "check":
        if shutil.which("tshark") is None:
            print("SKIP: tshark is not installed")
            return 77
        return check(c, sys.argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
