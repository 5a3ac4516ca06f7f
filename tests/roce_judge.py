#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
"""The judges every wire test shares: implementations that are not dpib's.

- scapy_or_skip: scapy's RoCE layers, or exit 77 (meson's SKIP) without them;
- tshark: every frame of a capture dissected by tshark's InfiniBand
  dissector (RoCEv2 on UDP 4791), as one record of named fields a frame;
- the IBA's opcode table as the judges read it (opinfo, opname), AETH
  syndromes by name (syndrome_class), PSN arithmetic;
- icrc_ipv6: the ICRC of an IPv6 RoCEv2 packet (IBA A17.3.3), which scapy
  2.5 lacks, hashed with zlib's CRC-32;
- Check: the failures of one named check.

Used by wire_dissect.py, wire_inject.py and wire_ipv6_vlan.py.
"""
import importlib
import subprocess
import sys
import zlib


def scapy_or_skip(*names):
    """Import module.attr for each name; without scapy, exit 77 (SKIP)."""
    out = []
    try:
        for n in names:
            mod, attr = n.rsplit(".", 1)
            out.append(getattr(importlib.import_module(mod), attr))
    except (ImportError, AttributeError) as e:
        print("SKIP: scapy with scapy.contrib.roce is needed (%s)" % e)
        sys.exit(77)
    return out


ROCE_PORT = 4791
PSN_MOD = 1 << 24

# Header lengths (IBA 9.2-9.5) and the headers each opcode carries.
HDR_LEN = {"reth": 16, "deth": 8, "aeth": 4, "atomiceth": 28,
           "atomicack": 8, "immdt": 4, "ieth": 4}

# Low five opcode bits -> (name, kind, position, extension headers, payload)
# kind: "req" or "resp"; position: first/middle/last/only/None.
OPS = {
    0x00: ("SEND FIRST", "req", "first", (), True),
    0x01: ("SEND MIDDLE", "req", "middle", (), True),
    0x02: ("SEND LAST", "req", "last", (), True),
    0x03: ("SEND LAST IMM", "req", "last", ("immdt",), True),
    0x04: ("SEND ONLY", "req", "only", (), True),
    0x05: ("SEND ONLY IMM", "req", "only", ("immdt",), True),
    0x06: ("WRITE FIRST", "req", "first", ("reth",), True),
    0x07: ("WRITE MIDDLE", "req", "middle", (), True),
    0x08: ("WRITE LAST", "req", "last", (), True),
    0x09: ("WRITE LAST IMM", "req", "last", ("immdt",), True),
    0x0a: ("WRITE ONLY", "req", "only", ("reth",), True),
    0x0b: ("WRITE ONLY IMM", "req", "only", ("reth", "immdt"), True),
    0x0c: ("READ REQUEST", "req", None, ("reth",), False),
    0x0d: ("READ RESPONSE FIRST", "resp", "first", ("aeth",), True),
    0x0e: ("READ RESPONSE MIDDLE", "resp", "middle", (), True),
    0x0f: ("READ RESPONSE LAST", "resp", "last", ("aeth",), True),
    0x10: ("READ RESPONSE ONLY", "resp", "only", ("aeth",), True),
    0x11: ("ACKNOWLEDGE", "resp", None, ("aeth",), False),
    0x12: ("ATOMIC ACKNOWLEDGE", "resp", None, ("aeth", "atomicack"), False),
    0x13: ("COMPARE SWAP", "req", None, ("atomiceth",), False),
    0x14: ("FETCH ADD", "req", None, ("atomiceth",), False),
    0x16: ("SEND LAST INV", "req", "last", ("ieth",), True),
    0x17: ("SEND ONLY INV", "req", "only", ("ieth",), True),
    0x1d: ("ATOMIC WRITE", "req", None, ("reth",), True),
}
ATOMIC_WRITE = 0x1d
TRANSPORTS = {0x00: ("RC", set(OPS)),
              0x20: ("UC", set(range(0x00, 0x0c))),
              0x60: ("UD", {0x04, 0x05})}


def opinfo(opcode):
    """(transport, name, kind, position, headers, payload) or None."""
    base, low = opcode & 0xe0, opcode & 0x1f
    if base not in TRANSPORTS or low not in TRANSPORTS[base][1]:
        return None
    tr = TRANSPORTS[base][0]
    name, kind, pos, hdrs, pay = OPS[low]
    if tr == "UD":
        hdrs = ("deth",) + hdrs
    return (tr, "%s %s" % (tr, name), kind, pos, hdrs, pay)


def opname(opcode):
    info = opinfo(opcode)
    return info[1] if info else "opcode 0x%02x" % opcode


# tshark field -> key in the per-frame record
FIELDS = [
    ("frame.number", "no"), ("frame.protocols", "protocols"),
    ("eth.src", "eth_src"), ("eth.dst", "eth_dst"), ("eth.type", "eth_type"),
    ("ip.src", "ip_src"), ("ip.dst", "ip_dst"), ("ip.len", "ip_len"),
    ("udp.srcport", "sport"), ("udp.dstport", "dport"),
    ("infiniband.bth.opcode", "opcode"), ("infiniband.bth.se", "se"),
    ("infiniband.bth.m", "m"), ("infiniband.bth.padcnt", "pad"),
    ("infiniband.bth.tver", "tver"), ("infiniband.bth.p_key", "pkey"),
    ("infiniband.bth.destqp", "dqp"), ("infiniband.bth.a", "ackreq"),
    ("infiniband.bth.psn", "psn"),
    ("infiniband.reth.va", "va"), ("infiniband.reth.r_key", "rkey"),
    ("infiniband.reth.dmalen", "dmalen"),
    ("infiniband.deth.q_key", "qkey"), ("infiniband.deth.srcqp", "srcqp"),
    ("infiniband.aeth.syndrome", "syndrome"), ("infiniband.aeth.msn", "msn"),
    ("infiniband.atomiceth.swapdt", "swap"),
    ("infiniband.atomiceth.cmpdt", "cmp"),
    ("infiniband.atomicacketh.origremdt", "orig"),
    ("infiniband.immdt", "imm"), ("infiniband.ieth", "ieth"),
    ("data.len", "data_len"),
    ("_ws.malformed", "malformed"), ("_ws.expert.severity", "severity"),
    ("_ws.expert.message", "expert"),
]
INT_KEYS = {"no", "ip_len", "sport", "dport", "opcode", "pad", "tver", "pkey",
            "dqp", "psn", "va", "rkey", "dmalen", "qkey", "srcqp", "syndrome",
            "msn", "swap", "cmp", "orig", "data_len", "eth_type"}
BOOL_KEYS = {"se", "m", "ackreq"}

# Payload heuristics of the InfiniBand dissector, by their short names.
PAYLOAD_HEURISTICS = ["eth_over_ib", "fc_infiniband", "iser_infiniband",
                      "lnet_ib", "rpcrdma_infiniband", "sdp_infiniband",
                      "smb_direct_infiniband", "smcr_infiniband",
                      "mellanox_eoib"]
EXPERT_WARN = 0x00600000       # PI_WARN; PI_ERROR is 0x00800000


def tshark(path, strict):
    cmd = ["tshark", "-n", "-r", path, "-d",
           "udp.port==%d,infiniband" % ROCE_PORT]
    if strict:
        for h in PAYLOAD_HEURISTICS:
            cmd += ["--disable-heuristic", h]
        cmd += ["--disable-protocol", "nvme-rdma"]
    cmd += ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
            "-E", "aggregator=;"]
    for f, _ in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("tshark failed: %s" % out.stderr.strip())
    frames = []
    for line in out.stdout.splitlines():
        vals = line.split("\t")
        rec = {}
        for (_, key), v in zip(FIELDS, vals):
            allv = [x for x in v.split(";") if x != ""]
            if key in ("severity", "expert", "malformed"):
                rec[key] = allv
                continue
            if not allv:
                rec[key] = None
            elif key in INT_KEYS:
                rec[key] = int(allv[0], 0)
            elif key in BOOL_KEYS:
                rec[key] = allv[0] in ("1", "True")
            elif key == "ieth":
                rec[key] = int(allv[0].replace(":", ""), 16)
            else:
                rec[key] = allv[0]
        frames.append(rec)
    return frames


def psn_add(a, n):
    return (a + n) % PSN_MOD


def psn_behind(a, b):
    """a is before b in the 24-bit PSN space (within half the space)."""
    return a != b and (b - a) % PSN_MOD < PSN_MOD // 2


class Check:
    """Failures of one named check; the first few are printed."""

    def __init__(self, name):
        self.name = name
        self.errors = []

    def fail(self, msg):
        self.errors.append(msg)

    def expect(self, cond, msg):
        if not cond:
            self.fail(msg)
        return cond


def syndrome_class(syn):
    kind = (syn >> 5) & 3
    if kind == 0:
        return "ACK"
    if kind == 1:
        return "RNR NAK"
    if kind == 3:
        return {0: "NAK PSN sequence error", 1: "NAK invalid request",
                2: "NAK remote access error",
                3: "NAK remote operational error",
                4: "NAK invalid RD request"}.get(syn & 0x1f)
    return None



def icrc_ipv6(ip6):
    """The ICRC of the IPv6 packet @ip6 (header to payload end, ICRC last):
    8 bytes of ones, then the packet with traffic class, flow label and
    hop limit as ones, the UDP checksum as ones and BTH byte 4 as ones."""
    body = bytearray(ip6[:-4])
    body[0] |= 0x0f                 # traffic class (low nibble of byte 0)
    body[1:4] = b"\xff\xff\xff"     # traffic class, flow label
    body[7] = 0xff                  # hop limit
    body[40 + 6:40 + 8] = b"\xff\xff"  # UDP checksum
    body[48 + 4] = 0xff             # BTH resv8a
    crc = zlib.crc32(b"\xff" * 8 + bytes(body)) & 0xffffffff
    return crc.to_bytes(4, "little")
