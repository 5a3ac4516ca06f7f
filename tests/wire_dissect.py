#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
"""
What dpib puts on the wire, judged by implementations that are not dpib's.

The verbs test programs run on the loopback device with DPIB_CAPTURE, so each
capture holds both directions of all their traffic. Then:

- tshark's InfiniBand dissector (RoCEv2 on UDP 4791) decodes every frame: it
  must be ARP or RoCEv2, carry no malformed mark and no expert warning or
  error, and its BTH and extension headers must say what the program asked
  for (opcodes, QPNs, PSNs, RETH lengths, immediate data, atomics, Q_Keys,
  AETH syndromes).
- scapy (scapy.contrib.roce) recomputes the ICRC of every RoCE frame and
  parses the BTH a second time; IPv4/UDP/BTH follow the conventions of Linux
  rxe (shared/vectors/rxe/README.md): DF set, TTL 64, DSCP 0 (ECN: ECT(0)
  on RC and UC frames, DCQCN's; rxe sends 0), UDP checksum 0,
  UDP source port in 0xC000-0xFFFF, P_Key 0xFFFF, TVer 0, no MigReq.
- per request stream the PSNs are consecutive (a READ takes one PSN per
  response packet) except for go-back-N after an RNR NAK or a PSN sequence
  error NAK with that PSN, and except where a connection starts again after
  a fatal NAK; FIRST and MIDDLE packets carry exactly the path MTU, LAST and
  ONLY at most that; every READ and atomic is answered (but those to
  test_verbs' peer on no link, OFF_LINK, which must carry the MAC of the
  ARP reply the test injected).
- responses are tied to the request stream they answer (learnt from their
  PSNs) and leave it in PSN order; after a NAK invalid request or remote
  access error the requester sends nothing more until a new connection
  (runs that ask for it: test_mw).
- ATOMIC WRITE (IBA 1.5, opcode 0x1D): RETH DMA length 8, exactly 8 payload
  bytes, answered by an ACKNOWLEDGE (never an ATOMIC ACKNOWLEDGE), by a NAK
  invalid request when misaligned or not 8 bytes long, else by nothing but
  an ACK or a NAK remote access error.
- SEND with Invalidate: tshark's IETH (infiniband.ieth) equals the raw
  bytes; a key that was never a RETH rkey on that connection must get NAK
  invalid request (test_mw: an accepted one names the key of the last RDMA
  done there); once a SEND with Invalidate of a key is ACKed, RDMA with that
  key gets NAK remote access error and naming it again NAK invalid request.

Debian 12's tshark (Wireshark 4.0) predates IBA 1.5: it shows opcode 0x1D
as "Unknown (29)" followed by an unknown header sequence, with no RETH and
no data. For those frames only, the BTH still comes from tshark, the RETH
and the 8 payload bytes are decoded here from the raw frame (struct), and
expert notes about the unknown opcode are not held against them; the ICRC
is recomputed by scapy as for every frame. A tshark that knows 0x1D must
agree with the raw decode.

Payload heuristics (RPC-over-RDMA, SMB Direct, iSER ...) are switched off:
they guess upper protocols from test patterns. A second pass with tshark's
defaults only accepts the one mark those heuristics are known to leave:
RPC-over-RDMA throwing on an RC SEND ONLY (with or without Invalidate)
shorter than its 16-byte minimum header (rxe's zero-length SEND ONLY in the
vectors gets the same mark).

usage: wire_dissect.py BUILD_TESTS_DIR SOURCE_TESTS_DIR
"""
import collections
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from roce_judge import *          # noqa: F401,F403 (the shared judge)
from roce_judge import scapy_or_skip

RawPcapReader, IP, UDP, BTH = scapy_or_skip(
    "scapy.utils.RawPcapReader", "scapy.layers.inet.IP",
    "scapy.layers.inet.UDP", "scapy.contrib.roce.BTH")

# test_verbs' peers on no link: their MACs come from ARP frames the test
# injects (.97 moves to a second MAC), and their requests go out (on the
# loopback port) and are never answered.
OFF_LINK = {"192.0.2.98": {"02:00:00:00:62:01"},
            "192.0.2.96": {"02:00:00:00:60:01"},
            "192.0.2.97": {"02:00:00:00:61:01", "02:00:00:00:61:02"}}
SEND_INV = (0x16, 0x17)
FATAL_NAKS = ("NAK invalid request", "NAK remote access error",
              "NAK remote operational error")
class Run:
    """One test program under one configuration, and what it must show."""

    def __init__(self, name, prog, conf, pmtu, expect):
        self.name, self.prog, self.conf = name, prog, conf
        self.pmtu, self.expect = pmtu, expect


SIZES_RC = [1, 2, 3, 7, 64, 255, 1023, 1024, 1025, 4095, 4096, 4097, 8192,
            12289, 65536, 65537, 262144, (1 << 20) - 1, 1 << 20]

EXPECT_RC = {
    "opcodes": set(range(0x00, 0x15)),
    "syndromes": {"ACK", "RNR NAK", "NAK invalid request",
                  "NAK remote access error"},
    "retransmit": True,
    "write_lens": set(SIZES_RC), "read_lens": set(SIZES_RC),
    "send_lens": set(SIZES_RC),
    "imm": {0xab00 + i for i in range(1, 19, 2)} |
           {0xc0de0000 + i for i in range(0, 19, 3)},
    "fetch_add": {5}, "cmp_swap": {(1005, 77), (1, 99)},
    "orig": {1000, 1005, 77, 0, 1, 100},
}
EXPECT_VERBS = {
    "opcodes": {0x04, 0x0a, 0x11, 0x20, 0x21, 0x23, 0x24, 0x26, 0x27, 0x28,
                0x64, 0x65},
    "syndromes": {"ACK", "NAK remote access error"},
    "retransmit": False,
    "qkeys": {0x11111111, 0x22222222},
    "imm": {0xfeed, 0x1234},
    "write_lens": {3000, 64, 8}, "send_lens": {16, 100, 2500, 200},
    "multicast": True, "solicited": True,
}
# test_mw: windows, invalidation, ATOMIC WRITE. The 3000-byte SEND with
# Invalidate is one SEND ONLY INV at 4096 bytes of path MTU, FIRST, MIDDLE
# and LAST INV at 1024; ibv_wr_send_inv's 10 bytes are always SEND ONLY INV.
# ATOMIC WRITE values are the requester's memory, read in host order.
EXPECT_MW = {
    "opcodes": {0x06, 0x08, 0x0a, 0x0c, 0x10, 0x11, 0x12, 0x14, 0x17, 0x1d},
    "syndromes": {"ACK", "NAK invalid request", "NAK remote access error"},
    "retransmit": False,
    "stop_after_nak": True,
    # an accepted SEND with Invalidate names the key of the last RDMA
    "inv_last_key": True,
    "write_lens": {0, 2, 8, 16, 64, 200, 512, 8192},
    "read_lens": {1, 8, 64, 1000, 4096},
    "send_lens": {3000, 10},
    "fetch_add": {1, 100},
    "atomic_write": {0x0123456789abcdef, 0xa5a5a5a5a5a5a5a5,
                     0xfeedfacecafebeef} |
                    {0x1000 + i for i in range(0, 48, 3)},
    "atomic_write_answers": {"ACK", "NAK remote access error",
                             "NAK invalid request (misaligned)"},
    # a window's key; the same key again; an MR's key (used for RDMA
    # before and after: live, but no window)
    "inv_answers": {"ACK", "NAK invalid request (invalidated key)",
                    "NAK invalid request (live key)"},
}
EXPECT_MW_1024 = dict(EXPECT_MW, opcodes=EXPECT_MW["opcodes"] |
                      {0x00, 0x01, 0x07, 0x0d, 0x0e, 0x0f, 0x16})
EXPECT_SEED = {
    "opcodes": {0x05, 0x11},
    "syndromes": {"ACK"},
    "retransmit": False,
    "imm": {0x12345678},
    "payloads": {b"Hello, InfiniBand Verbs on dpib!\0"},
}


class Analysis:
    """All checks of one capture."""

    def __init__(self, run, frames, raw):
        self.run = run
        self.frames = frames
        self.raw = raw
        self.checks = collections.OrderedDict()
        self.per_opcode = collections.Counter()
        self.seen = collections.defaultdict(set)
        self.retransmits = 0
        self.peer = {}          # response stream -> request stream
        self.new_conn = set()   # requests that start a connection again
        self.nak_hits = {}      # fatal NAK frame -> opcode it answered
        self.invalid = {}       # (responder, rkey) -> frame invalidating it
        self.raw_fields()

    def check(self, name):
        if name not in self.checks:
            self.checks[name] = Check(name)
        return self.checks[name]

    # ATOMIC WRITE's RETH and payload, and every IETH, from the raw bytes.
    def raw_fields(self):
        c = self.check("raw decode")
        for f, frame in zip(self.frames, self.raw):
            op, n = f["opcode"], f["no"]
            if op != ATOMIC_WRITE and op not in SEND_INV:
                continue
            if not c.expect(frame[12:14] == b"\x08\x00",
                            "frame %d: not IPv4" % n):
                continue
            bth = 14 + (frame[14] & 0xf) * 4 + 8
            end = 14 + int.from_bytes(frame[16:18], "big") - 4
            if op in SEND_INV:
                key = struct.unpack_from("!I", frame, bth + 12)[0]
                c.expect(f["ieth"] == key, "frame %d: tshark IETH %s, bytes "
                         "say %#x" % (n, f["ieth"], key))
                continue
            va, rkey, dmalen = struct.unpack_from("!QII", frame, bth + 12)
            pay = frame[bth + 28:end - ((frame[bth + 1] >> 4) & 3)]
            f["aw_tshark"] = f["dmalen"] is not None
            if f["aw_tshark"]:
                c.expect((f["va"], f["rkey"], f["dmalen"]) ==
                         (va, rkey, dmalen), "frame %d: tshark RETH %s, "
                         "bytes say %s" % (n, (f["va"], f["rkey"],
                                               f["dmalen"]),
                                           (va, rkey, dmalen)))
            f.update(va=va, rkey=rkey, dmalen=dmalen, aw_payload=pay)

    def paylen(self, f, info):
        hdr = 20 + 8 + 12 + sum(HDR_LEN[h] for h in info[4]) + 4
        return f["ip_len"] - hdr - (f["pad"] or 0)

    # tshark: ARP or RoCEv2, no malformed marks, no expert warnings.
    def dissection(self):
        c = self.check("dissection")
        for f in self.frames:
            n = f["no"]
            protos = (f["protocols"] or "").split(":")
            if "arp" in protos:
                self.per_opcode["ARP"] += 1
                continue
            if protos[:5] != ["eth", "ethertype", "ip", "udp", "infiniband"]:
                c.fail("frame %d: neither ARP nor RoCEv2 (%s)"
                       % (n, f["protocols"]))
                continue
            c.expect(f["dport"] == ROCE_PORT, "frame %d: UDP port %s"
                     % (n, f["dport"]))
            c.expect(not f["malformed"], "frame %d (%s): malformed %s"
                     % (n, opname(f["opcode"] or 0), f["malformed"]))
            bad = [(int(s, 0), m) for s, m in
                   zip(f["severity"], f["expert"] + [""] * 8)
                   if int(s, 0) >= EXPERT_WARN]
            if f["opcode"] == ATOMIC_WRITE and not f.get("aw_tshark"):
                # A tshark without IBA 1.5: only its unknown-opcode notes.
                bad = [(v, m) for v, m in bad if "nknown" not in m and
                       "endor" not in m]
            c.expect(not bad, "frame %d: expert info %s" % (n, bad))
            if c.expect(f["opcode"] is not None and opinfo(f["opcode"]),
                        "frame %d: opcode %s unknown" % (n, f["opcode"])):
                self.per_opcode[opname(f["opcode"])] += 1
                self.seen["opcodes"].add(f["opcode"])

    # scapy: ICRC and the IPv4/UDP/BTH conventions of rxe.
    def headers(self):
        ci = self.check("icrc (scapy)")
        ch = self.check("ip/udp/bth conventions")
        for f, frame in zip(self.frames, self.raw):
            if f["opcode"] is None:
                continue
            n = f["no"]
            iplen = int.from_bytes(frame[16:18], "big")
            if not ch.expect(14 + iplen <= len(frame),
                             "frame %d: IPv4 length %d past the frame"
                             % (n, iplen)):
                continue
            ip = IP(frame[14:14 + iplen])
            if not ch.expect(BTH in ip, "frame %d: scapy sees no BTH" % n):
                continue
            bth = ip[BTH]
            icrc = frame[14 + iplen - 4:14 + iplen]
            want = bth.compute_icrc(None)
            ci.expect(icrc == want, "frame %d (%s): ICRC %s, scapy computes %s"
                      % (n, opname(f["opcode"]), icrc.hex(), want.hex()))
            ch.expect((bth.opcode, bth.dqpn, bth.psn) ==
                      (f["opcode"], f["dqp"], f["psn"]),
                      "frame %d: scapy and tshark disagree on the BTH" % n)
            ch.expect(ip.version == 4 and ip.ihl == 5,
                      "frame %d: IPv4 header with options" % n)
            ch.expect(ip.flags == 2 and ip.frag == 0,
                      "frame %d: IPv4 flags %s frag %d, want DF only"
                      % (n, ip.flags, ip.frag))
            # DSCP 0; ECN: ECT(0) on RC and UC frames (DCQCN, on by
            # default: the congestion suite checks the marking), not on UD
            # frames, which nothing rate-controls.
            want_tos = 2 if f["opcode"] >> 5 in (0, 1) else 0
            ch.expect(ip.tos == want_tos, "frame %d: TOS %#x, want %#x"
                      % (n, ip.tos, want_tos))
            mcast = (int.from_bytes(frame[30:34], "big") >> 28) == 0xe
            # A multicast AH here has hop_limit 0: no TTL rule for it.
            if not mcast:
                ch.expect(ip.ttl == 64, "frame %d: TTL %d" % (n, ip.ttl))
            ch.expect(ip.proto == 17, "frame %d: protocol %d" % (n, ip.proto))
            udp = ip[UDP]
            ch.expect(udp.chksum == 0, "frame %d: UDP checksum %#x"
                      % (n, udp.chksum))
            ch.expect(0xc000 <= udp.sport <= 0xffff,
                      "frame %d: UDP source port %#x" % (n, udp.sport))
            ch.expect(udp.len == iplen - 20, "frame %d: UDP length" % n)
            ch.expect(bth.pkey == 0xffff, "frame %d: P_Key %#x"
                      % (n, bth.pkey))
            ch.expect(bth.version == 0, "frame %d: TVer %d"
                      % (n, bth.version))
            ch.expect(bth.migreq == 0 and bth.fecn == 0 and bth.becn == 0 and
                      bth.resv6 == 0 and bth.resv7 == 0,
                      "frame %d: MigReq/FECN/BECN/reserved bits set" % n)
            if mcast:
                want_mac = "01:00:5e:%02x:%02x:%02x" % (
                    frame[31] & 0x7f, frame[32], frame[33])
                ch.expect(f["eth_dst"] == want_mac and f["dqp"] == 0xffffff,
                          "frame %d: multicast to %s QP %#x" %
                          (n, f["eth_dst"], f["dqp"]))
                self.seen["multicast"].add(True)
            elif f["ip_dst"] in OFF_LINK:
                ch.expect(f["eth_dst"] in OFF_LINK[f["ip_dst"]],
                          "frame %d: to %s at %s" % (n, f["ip_dst"],
                                                     f["eth_dst"]))
            else:
                # The loopback device sends to itself only.
                ch.expect(f["eth_dst"] == f["eth_src"] and
                          f["ip_dst"] == f["ip_src"],
                          "frame %d: %s -> %s on a loopback device"
                          % (n, f["ip_src"], f["ip_dst"]))
            self.payload_rules(f, bytes(frame[14:14 + iplen]), ch)

    def payload_rules(self, f, datagram, c):
        n, info = f["no"], opinfo(f["opcode"])
        if info is None:
            return
        tr, name, kind, pos, hdrs, has_payload = info
        plen = self.paylen(f, info)
        c.expect(plen >= 0, "frame %d (%s): shorter than its headers"
                 % (n, name))
        if has_payload and plen >= 0:
            c.expect(f["pad"] == (-plen) % 4, "frame %d (%s): pad %d for %d "
                     "bytes" % (n, name, f["pad"], plen))
            if f["data_len"] is not None:
                c.expect(f["data_len"] == plen + f["pad"],
                         "frame %d: tshark payload %d, headers say %d"
                         % (n, f["data_len"], plen + f["pad"]))
            start = 20 + 8 + 12 + sum(HDR_LEN[h] for h in hdrs)
            if "payloads" in self.run.expect and pos == "only":
                self.seen["payloads"].add(datagram[start:start + plen])
        elif not has_payload:
            c.expect(plen == 0 and f["pad"] == 0,
                     "frame %d (%s): %d payload bytes" % (n, name, plen))
        for h in ("reth", "deth", "aeth", "imm", "ieth"):
            present = {"imm": "immdt"}.get(h, h) in hdrs
            key = {"reth": "dmalen", "deth": "qkey", "aeth": "syndrome",
                   "imm": "imm", "ieth": "ieth"}[h]
            c.expect(present == (f[key] is not None),
                     "frame %d (%s): tshark %s %s" %
                     (n, name, "lacks" if present else "shows", h.upper()))
        if f["imm"] is not None:
            self.seen["imm"].add(int(f["imm"].replace(":", ""), 16))
        if f["opcode"] == ATOMIC_WRITE:
            # IBA 1.5: the RETH says 8 and exactly 8 bytes follow it.
            self.check("atomic write").expect(
                f["dmalen"] == 8 and plen == 8 and len(f["aw_payload"]) == 8,
                "frame %d: ATOMIC WRITE DMA length %d, %d payload bytes"
                % (n, f["dmalen"], len(f["aw_payload"])))
            self.seen["atomic_write"].add(
                int.from_bytes(f["aw_payload"], sys.byteorder))
        if f["se"]:
            c.expect(pos in ("last", "only") and kind == "req" and
                     ("SEND" in name or "IMM" in name),
                     "frame %d (%s): solicited event bit" % (n, name))
            self.seen["solicited"].add(True)
        # rxe: AckReq on the last packet of each RC request (mid-message
        # it may ask for an early ACK), never on UC, UD or responses.
        want_a = False
        if tr == "RC" and kind == "req":
            want_a = pos in ("last", "only", None) or f["ackreq"]
        c.expect(f["ackreq"] == want_a, "frame %d (%s): AckReq %d"
                 % (n, name, f["ackreq"]))
        if tr == "UD":
            self.seen["qkeys"].add(f["qkey"])
            c.expect(f["srcqp"] is not None and f["srcqp"] < 1 << 24,
                     "frame %d: DETH source QP %s" % (n, f["srcqp"]))

    @staticmethod
    def stream(f, tr):
        """A request stream: UDP source port (per source QP, as rxe) and
        destination QP; UD PSNs run per source QP (DETH)."""
        if tr == "UD":
            return ("UD", f["ip_src"], f["srcqp"])
        return (tr, f["ip_src"], f["sport"], f["ip_dst"], f["dqp"])

    def psns(self, f):
        """How many PSNs a request takes: a READ one per response packet."""
        if f["opcode"] == 0x0c:
            return max(1, -(-f["dmalen"] // self.run.pmtu))
        return 1

    # RC headers name the destination QP only, so which request stream a
    # response stream answers is learnt: the one request stream that had
    # sent every PSN the response stream carried (the candidates start over
    # when none is left: a QPN used again). On the loopback port every
    # stream shares the addresses, and two streams may both have sent
    # every such PSN (a long one through a PSN wrap, beside a short one
    # started near it): then the one that sent each response's PSN last
    # before it, over most responses, is the one answered.
    def link(self):
        sent = collections.defaultdict(dict)
        cand = {}
        votes = collections.defaultdict(collections.Counter)
        for f in self.frames:
            info = f["opcode"] is not None and opinfo(f["opcode"])
            if not info or info[0] != "RC":
                continue
            if info[2] == "req":
                s = sent[self.stream(f, "RC")]
                for i in range(self.psns(f)):
                    s[psn_add(f["psn"], i)] = f["no"]
                continue
            r = (f["ip_src"], f["sport"], f["ip_dst"], f["dqp"])
            here = {k for k, s in sent.items() if k[1] == f["ip_dst"] and
                    k[3] == f["ip_src"] and f["psn"] in s}
            cand[r] = (cand.get(r, here) & here) or here
            if here:
                votes[r][max(here, key=lambda k: sent[k][f["psn"]])] += 1
        self.peer = {}
        for r, c in cand.items():
            if len(c) == 1:
                self.peer[r] = next(iter(c))
                continue
            ranked = [k for k, _ in votes[r].most_common() if k in c]
            if ranked:
                self.peer[r] = ranked[0]

    # What answered each RC request, connection by connection: ATOMIC
    # WRITE, SEND with Invalidate and access through invalidated keys, the
    # order of responses, silence after a fatal NAK.
    def outcomes(self):
        self.link()
        qs = {}
        for f in self.frames:
            info = f["opcode"] is not None and opinfo(f["opcode"])
            if not info or info[0] != "RC":
                continue
            if info[2] == "req":
                q = qs.setdefault(self.stream(f, "RC"), {
                    "out": [], "dead": None, "last": None, "resent": None,
                    "rkeys": set(), "msg": None, "starts": {f["psn"]},
                    "next": f["psn"], "last_key": None})
                self.request(f, info, q)
                continue
            k = self.peer.get((f["ip_src"], f["sport"], f["ip_dst"],
                               f["dqp"]))
            if k in qs:
                self.response(f, info, qs[k])
        co = self.check("request outcomes")
        for q in qs.values():
            for e in q["out"]:
                co.expect(e["op"] != ATOMIC_WRITE and e["op"] not in SEND_INV,
                          "frame %d (%s) PSN %#x never answered"
                          % (e["no"], opname(e["op"]), e["psn"]))

    def request(self, f, info, q):
        n, psn, pos, hdrs = f["no"], f["psn"], info[3], info[4]
        # A connection starts again (the QPs went through Reset) with a new
        # message at a PSN where one started before, or after a fatal NAK
        # away from the PSN that was NAKed.
        new = (pos in ("first", "only", None) and psn != q["next"] and
               psn in q["starts"])
        if q["dead"] is not None:
            dn, dpsn = q["dead"]
            if (0 < (psn - dpsn) % PSN_MOD < 1024 or pos in ("middle", "last")
                    or (psn == dpsn and psn not in q["starts"])):
                if self.run.expect.get("stop_after_nak"):
                    self.check("after fatal NAK").fail(
                        "frame %d (%s) PSN %#x: sent after the NAK of frame "
                        "%d (PSN %#x), no new connection"
                        % (n, info[1], psn, dn, dpsn))
                return
            new = True
        if new:
            q.update(out=[], dead=None, last=None, resent=None)
            q["starts"].add(psn)
            self.new_conn.add(n)
        q["next"] = psn_add(psn, self.psns(f))
        if q["last"] is not None and not psn_behind(q["last"], psn):
            # Sent again: the responder may answer its old PSN again.
            if q["resent"] is None or psn_behind(psn, q["resent"]):
                q["resent"] = psn
        if pos in ("first", "only", None):
            q["msg"] = (f["rkey"], f["dmalen"]) if "reth" in hdrs else None
        if "reth" in hdrs:
            q["rkeys"].add(f["rkey"])
        if pos in ("first", "middle"):
            return
        e = {"no": n, "psn": psn, "end": psn_add(psn, self.psns(f) - 1),
             "op": f["opcode"], "f": f, "key": q["msg"], "stranger": False}
        if f["opcode"] in SEND_INV:
            # The key a SEND with Invalidate names was handed out for RDMA
            # on this connection, or the responder refuses it.
            e["stranger"] = f["ieth"] not in q["rkeys"]
        q["out"] = [x for x in q["out"] if x["psn"] != psn] + [e]

    def response(self, f, info, q):
        n, p, pos = f["no"], f["psn"], info[3]
        cls = "ACK" if f["syndrome"] is None else syndrome_class(f["syndrome"])
        if q["dead"] is not None:
            if self.run.expect.get("stop_after_nak"):
                self.check("after fatal NAK").fail(
                    "frame %d (%s PSN %#x): the responder answered after "
                    "its NAK in frame %d" % (n, info[1], p, q["dead"][0]))
            return
        if q["last"] is not None and psn_behind(p, q["last"]):
            self.check("response order").expect(
                q["resent"] is not None and not psn_behind(p, q["resent"]),
                "frame %d (%s %s) PSN %#x after a response with PSN %#x; "
                "nothing was sent again (IBA 9.5: responses in request order)"
                % (n, info[1], cls, p, q["last"]))
            return
        q["last"] = p
        for e in [e for e in q["out"] if psn_behind(e["end"], p)]:
            # Everything before a response's PSN is done (9.7.5.1.1); a
            # READ or atomic waits for its own response.
            if e["op"] not in (0x0c, 0x13, 0x14):
                self.settle(q, e, "ACK")
        if cls in ("RNR NAK", "NAK PSN sequence error"):
            q["out"] = [e for e in q["out"] if psn_behind(e["end"], p)]
            return
        hit = [e for e in q["out"] if not psn_behind(p, e["psn"]) and
               not psn_behind(e["end"], p)]
        co = self.check("request outcomes")
        if not hit:
            co.expect(cls not in FATAL_NAKS, "frame %d: %s at PSN %#x "
                      "answers no request" % (n, cls, p))
            return
        e = hit[0]
        if f["opcode"] == 0x12:
            co.expect(e["op"] in (0x13, 0x14), "frame %d: ATOMIC "
                      "ACKNOWLEDGE answers frame %d (%s)"
                      % (n, e["no"], opname(e["op"])))
        elif f["opcode"] != 0x11:
            co.expect(e["op"] == 0x0c, "frame %d (%s) answers frame %d (%s)"
                      % (n, info[1], e["no"], opname(e["op"])))
            if pos in ("middle", "first"):
                return
        if cls in FATAL_NAKS:
            self.nak_hits[n] = e["op"]
            self.settle(q, e, cls)
            q["out"], q["dead"] = [], (n, p)
            return
        self.settle(q, e, cls)

    def settle(self, q, e, outcome):
        """@e was answered with @outcome: judge it by its kind."""
        q["out"].remove(e)
        co = self.check("request outcomes")
        f, n, op = e["f"], e["no"], e["op"]
        resp = f["ip_dst"]
        if op == ATOMIC_WRITE:
            bad = f["va"] % 8 != 0 or f["dmalen"] != 8
            want = (("NAK invalid request",) if bad else
                    ("ACK", "NAK remote access error"))
            co.expect(outcome in want, "frame %d: ATOMIC WRITE to %#x (%d "
                      "bytes) answered by %s, want %s"
                      % (n, f["va"], f["dmalen"], outcome, " or ".join(want)))
            self.seen["atomic_write_answers"].add(
                outcome + (" (misaligned)" if f["va"] % 8 else ""))
        if op in SEND_INV:
            key, by = f["ieth"], self.invalid.get((resp, f["ieth"]))
            if by is not None or e["stranger"]:
                co.expect(outcome == "NAK invalid request", "frame %d: SEND "
                          "with Invalidate of rkey %#x (%s) answered by %s, "
                          "want NAK invalid request" % (
                              n, key, "invalidated by frame %d" % by if by
                              else "never a RETH rkey here", outcome))
            elif outcome == "ACK":
                self.invalid[(resp, key)] = n
                if self.run.expect.get("inv_last_key"):
                    co.expect(key == q["last_key"], "frame %d: SEND with "
                              "Invalidate of rkey %#x; the last RDMA done "
                              "here used %s" % (n, key, q["last_key"] and
                                                 hex(q["last_key"])))
            self.seen["inv_answers"].add(outcome + (
                "" if outcome == "ACK" else " (invalidated key)" if by
                else " (unknown key)" if e["stranger"] else " (live key)"))
        elif e["key"] is not None and e["key"][1] > 0:
            if outcome == "ACK":
                q["last_key"] = e["key"][0]
            by = self.invalid.get((resp, e["key"][0]))
            if by is not None:
                co.expect(outcome == "NAK remote access error",
                          "frame %d (%s): rkey %#x, invalidated by frame %d, "
                          "answered by %s" % (n, opname(op), e["key"][0], by,
                                              outcome))

    # PSNs, segmentation, READ and atomic responses.
    def transport(self):
        cp = self.check("psn order")
        cs = self.check("segmentation")
        cr = self.check("responses")
        pmtu = self.run.pmtu
        streams = {}
        nak_psns = collections.Counter()
        all_nak_psns = set()
        req_psns = set()
        pending_read = collections.defaultdict(collections.deque)
        pending_atomic = collections.Counter()
        reads = {}
        for f in self.frames:
            info = f["opcode"] is not None and opinfo(f["opcode"])
            if not info or f["ip_dst"] in OFF_LINK:
                continue
            tr, name, kind, pos, hdrs, _ = info
            n, psn = f["no"], f["psn"]
            plen = self.paylen(f, info)
            if kind == "req":
                req_psns.add(psn)
                key = self.stream(f, tr)
                s = streams.setdefault(key, {"next": psn, "msg": None,
                                             "bytes": 0, "len": 0,
                                             "mtu": pmtu if tr == "RC"
                                             else None})
                if psn != s["next"]:
                    if nak_psns[psn] > 0 and psn_behind(psn, s["next"]):
                        nak_psns[psn] -= 1
                        self.retransmits += 1
                        s["msg"] = "resync"
                    elif n in self.new_conn:
                        s["msg"] = None
                    else:
                        cp.fail("frame %d (%s) QP %#x: PSN %#x, expected %#x"
                                % (n, name, f["dqp"], psn, s["next"]))
                step = 1
                if f["opcode"] == 0x0c:
                    step = self.psns(f)
                    pending_read[psn].append(f["dmalen"])
                    self.seen["read_lens"].add(f["dmalen"])
                elif f["opcode"] in (0x13, 0x14):
                    pending_atomic[psn] += 1
                    if f["opcode"] == 0x14:
                        self.seen["fetch_add"].add(f["swap"])
                    else:
                        self.seen["cmp_swap"].add((f["cmp"], f["swap"]))
                s["next"] = psn_add(psn, step)
                if tr != "UD" and pos is not None:
                    self.segment(cs, s, f, name, pos, plen, "write" if
                                 "WRITE" in name else "send")
                elif tr == "UD":
                    cs.expect(plen <= pmtu, "frame %d: UD payload %d > %d"
                              % (n, plen, pmtu))
                    self.seen["send_lens"].add(plen)
                continue
            # Responses.
            if f["syndrome"] is not None:
                cls = syndrome_class(f["syndrome"])
                cr.expect(cls is not None, "frame %d: AETH syndrome %#x"
                          % (n, f["syndrome"]))
                cr.expect(f["opcode"] == 0x11 or cls == "ACK",
                          "frame %d (%s) carries %s" % (n, name, cls))
                self.seen["syndromes"].add(cls)
                if cls in ("RNR NAK", "NAK PSN sequence error"):
                    nak_psns[psn] += 1
                if cls != "ACK":
                    all_nak_psns.add(psn)
                # A READ or atomic NAKed is answered: a later one at the
                # same PSN (a new connection) is another.
                hit = self.nak_hits.get(n)
                if hit == 0x0c and pending_read[psn]:
                    pending_read[psn].popleft()
                elif hit in (0x13, 0x14) and pending_atomic[psn] > 0:
                    pending_atomic[psn] -= 1
            if f["opcode"] in (0x11, 0x12):
                cr.expect(psn in req_psns, "frame %d (%s): PSN %#x was "
                          "never requested" % (n, name, psn))
            if f["opcode"] == 0x12:
                if cr.expect(pending_atomic[psn] > 0, "frame %d: atomic ACK "
                             "PSN %#x answers no atomic" % (n, psn)):
                    pending_atomic[psn] -= 1
                self.seen["orig"].add(f["orig"])
            if pos is None:
                continue
            rkey = (f["ip_src"], f["sport"], f["dqp"])
            if pos in ("first", "only"):
                if not cr.expect(pending_read[psn], "frame %d (%s): PSN %#x "
                                 "answers no READ" % (n, name, psn)):
                    continue
                reads[rkey] = {"len": pending_read[psn].popleft(),
                               "next": psn_add(psn, 1), "bytes": plen}
                r = reads[rkey]
                if pos == "only":
                    cs.expect(plen == r["len"] and plen <= pmtu,
                              "frame %d: READ RESPONSE ONLY %d bytes for %d"
                              % (n, plen, r["len"]))
                    del reads[rkey]
                else:
                    cs.expect(plen == pmtu, "frame %d: READ RESPONSE FIRST "
                              "%d bytes, path MTU %d" % (n, plen, pmtu))
                continue
            r = reads.get(rkey)
            if not cr.expect(r is not None, "frame %d (%s) outside a READ"
                             % (n, name)):
                continue
            cp.expect(psn == r["next"], "frame %d (%s): PSN %#x, expected "
                      "%#x" % (n, name, psn, r["next"]))
            r["next"] = psn_add(psn, 1)
            r["bytes"] += plen
            if pos == "middle":
                cs.expect(plen == pmtu, "frame %d: READ RESPONSE MIDDLE %d "
                          "bytes, path MTU %d" % (n, plen, pmtu))
            else:
                cs.expect(0 < plen <= pmtu and r["bytes"] == r["len"],
                          "frame %d: READ RESPONSE LAST ends at %d of %d"
                          % (n, r["bytes"], r["len"]))
                del reads[rkey]
        for psn, q in pending_read.items():
            cr.expect(not q or psn in all_nak_psns,
                      "READ at PSN %#x never answered" % psn)
        for psn, k in pending_atomic.items():
            cr.expect(k == 0 or psn in all_nak_psns,
                      "atomic at PSN %#x never answered" % psn)
        cr.expect(not reads, "READ responses left unfinished: %s" % reads)

    def segment(self, c, s, f, name, pos, plen, kind):
        n = f["no"]
        mtu = s["mtu"] or self.run.pmtu
        resync = s["msg"] == "resync"
        if pos in ("first", "only"):
            c.expect(s["msg"] in (None, "resync"), "frame %d (%s) inside a "
                     "%s message" % (n, name, s["msg"]))
            s["msg"], s["bytes"] = kind, plen
            s["len"] = f["dmalen"] if kind == "write" else None
        else:
            c.expect(s["msg"] in (kind, "resync"), "frame %d (%s) outside a "
                     "%s message" % (n, name, kind))
            s["msg"] = kind
            s["bytes"] += plen
        if pos in ("first", "middle"):
            if s["mtu"] is None:
                s["mtu"] = plen
                c.expect(plen in (256, 512, 1024, 2048, 4096) and
                         plen <= self.run.pmtu, "frame %d: path MTU %d"
                         % (n, plen))
            c.expect(plen == s["mtu"], "frame %d (%s): %d bytes, path MTU %d"
                     % (n, name, plen, s["mtu"]))
            return
        c.expect(plen <= mtu, "frame %d (%s): %d bytes > path MTU %d"
                 % (n, name, plen, mtu))
        c.expect(pos == "only" or plen > 0, "frame %d (%s): empty LAST"
                 % (n, name))
        if not resync:
            if kind == "write" and s["len"] is not None:
                c.expect(s["bytes"] == s["len"], "frame %d: WRITE of %d "
                         "bytes carried %d" % (n, s["len"], s["bytes"]))
                self.seen["write_lens"].add(s["len"])
            elif kind == "send":
                self.seen["send_lens"].add(s["bytes"])
        s["msg"] = None

    # What each program must have produced.
    def coverage(self):
        c = self.check("coverage")
        exp = self.run.expect
        missing = exp["opcodes"] - self.seen["opcodes"]
        c.expect(not missing, "opcodes never seen: %s"
                 % ", ".join(opname(o) for o in sorted(missing)))
        for key in ("syndromes", "write_lens", "read_lens", "send_lens",
                    "imm", "fetch_add", "cmp_swap", "orig", "payloads",
                    "atomic_write", "atomic_write_answers", "inv_answers"):
            if key in exp:
                c.expect(exp[key] <= self.seen[key], "%s never seen: %s"
                         % (key, sorted(exp[key] - self.seen[key],
                                        key=str)))
        if "qkeys" in exp:
            c.expect(self.seen["qkeys"] == exp["qkeys"], "UD Q_Keys %s"
                     % sorted(self.seen["qkeys"]))
        for key in ("multicast", "solicited"):
            if exp.get(key):
                c.expect(self.seen[key], "no %s frame" % key)
        if exp["retransmit"]:
            c.expect(self.retransmits > 0, "no retransmission after RNR NAK")
        else:
            c.expect(self.retransmits == 0, "%d retransmissions"
                     % self.retransmits)


def quirk_pass(path, strict_frames):
    """tshark defaults: only the RPC-over-RDMA mark on short SEND ONLY."""
    c = Check("tshark defaults")
    by_no = {f["no"]: f for f in strict_frames}
    for f in tshark(path, strict=False):
        if not f["malformed"]:
            continue
        s = by_no.get(f["no"])
        info = s and s["opcode"] is not None and opinfo(s["opcode"])
        plen = (s["ip_len"] - 20 - 8 - 12 - 4 - s["pad"]) if info else None
        c.expect(info and s["opcode"] in (0x04, 0x17) and plen < 16 and
                 all("RPCoRDMA" in m for m in f["malformed"]
                     if m != "_ws.malformed"),
                 "frame %d: %s" % (f["no"], f["malformed"]))
    return c


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    build, source = sys.argv[1], sys.argv[2]
    if shutil.which("tshark") is None:
        print("SKIP: tshark is not installed")
        return 77
    mtu1500 = os.path.join(source, "conf", "mtu1500.conf")
    runs = [
        Run("rc", "test_rc", "", 4096, EXPECT_RC),
        Run("rc_mtu1500", "test_rc", mtu1500, 1024, EXPECT_RC),
        Run("verbs", "test_verbs", "", 4096, EXPECT_VERBS),
        Run("verbs_mtu1500", "test_verbs", mtu1500, 1024, EXPECT_VERBS),
        Run("seed_sample", "test_seed_sample", "", 4096, EXPECT_SEED),
        Run("mw", "test_mw", "", 4096, EXPECT_MW),
        Run("mw_mtu1500", "test_mw", mtu1500, 1024, EXPECT_MW_1024),
    ]
    passed = failed = 0
    tmp = tempfile.mkdtemp(prefix="dpib-wire-")
    keep = False
    for run in runs:
        pcap = os.path.join(tmp, run.name + ".pcap")
        env = dict(os.environ, DPIB_CONF=run.conf, DPIB_CAPTURE=pcap)
        prog = os.path.join(build, run.prog)
        checks = []
        ran = Check("program")
        try:
            p = subprocess.run([prog], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=300)
            ran.expect(p.returncode == 0, "%s exited %d:\n%s" %
                       (prog, p.returncode, p.stdout.decode()[-2000:]))
        except (OSError, subprocess.TimeoutExpired) as e:
            ran.fail("%s: %s" % (prog, e))
        checks.append(ran)
        if not ran.errors:
            frames = tshark(pcap, strict=True)
            raw = [bytes(b) for b, _ in RawPcapReader(pcap)]
            a = Analysis(run, frames, raw)
            if not a.check("frames").expect(
                    len(raw) == len(frames) and frames,
                    "%d frames, tshark read %d" % (len(raw), len(frames))):
                checks += a.checks.values()
            else:
                a.dissection()
                a.headers()
                a.outcomes()
                a.transport()
                a.coverage()
                checks += a.checks.values()
                checks.append(quirk_pass(pcap, frames))
            print("%s: %d frames, %d retransmitted after NAKs" %
                  (run.name, len(raw), a.retransmits))
            for op, k in sorted(a.per_opcode.items()):
                print("    %-32s %7d" % (op, k))
            print("    AETH: %s" % ", ".join(sorted(a.seen["syndromes"])))
        for c in checks:
            if c.errors:
                failed += 1
                keep = True
                print("FAIL %s: %s (%d errors)" % (run.name, c.name,
                                                   len(c.errors)))
                for e in c.errors[:10]:
                    print("    " + e)
            else:
                passed += 1
                print("ok %s: %s" % (run.name, c.name))
        sys.stdout.flush()
    if keep:
        print("captures kept in %s" % tmp)
    else:
        shutil.rmtree(tmp)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
