# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# python3-pyverbs (rdma-core's Python binding, unmodified) on dpib: run with
# dpib-run /usr/bin/python3. Opens the loopback device, queries it, and
# moves data through two RC QPs with RDMA WRITE and SEND, and through
# memory windows of both types bound by pyverbs.
import sys

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + what)
    else:
        failed += 1
        print("FAIL - " + what)


def poll(cq):
    for _ in range(1000000):
        n, wcs = cq.poll()
        if n:
            return wcs[0]
    raise RuntimeError("no completion")


names = [x.name for x in d.get_device_list()]
check(b"dpib0" in names, "device list %s" % names)
ctx = d.Context(name="dpib0")
attr = ctx.query_device()
check(attr.phys_port_cnt == 1 and attr.max_qp > 0, "query_device")
port = ctx.query_port(1)
check(port.state == e.IBV_PORT_ACTIVE and port.link_layer ==
      e.IBV_LINK_LAYER_ETHERNET, "query_port: active, Ethernet")
gid = ctx.query_gid(1, 0)
check(str(gid).endswith("7f00:0001") or "127.0.0.1" in str(gid),
      "GID 0 is ::ffff:127.0.0.1 (%s)" % gid)
ax = ctx.query_device_ex()
check(ax.hca_core_clock > 0 and ax.completion_timestamp_mask != 0 and
      ax.device_cap_flags_ex & (1 << 40) and
      ax.orig_attr.device_cap_flags & e.IBV_DEVICE_MEM_WINDOW,
      "query_device_ex: clock %d kHz, ATOMIC WRITE, memory windows" %
      ax.hca_core_clock)
t0 = ctx.query_rt_values_ex()
t1 = ctx.query_rt_values_ex()
check(t1[1] > t0[1], "query_rt_values_ex: raw clock runs (%s)" % (t1,))
pd = PD(ctx)
access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
mr = MR(pd, 8192, access | e.IBV_ACCESS_MW_BIND)
cq = CQ(ctx, 64)
cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
       for _ in range(2)]
for i, qp in enumerate(qps):
    qa = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    qa.qp_access_flags = access
    qp.to_init(qa)
    qa = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1)
    qa.path_mtu = e.IBV_MTU_1024
    qa.dest_qp_num = qps[1 - i].qp_num
    qa.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=0),
                        is_global=1, port_num=1)
    qa.max_dest_rd_atomic = 1
    qp.to_rtr(qa)
    qa = QPAttr(qp_state=e.IBV_QPS_RTS, port_num=1)
    qa.timeout = 14
    qa.retry_cnt = 7
    qa.rnr_retry = 7
    qp.to_rts(qa)
check(all(q.qp_state == e.IBV_QPS_RTS for q in qps), "two RC QPs in RTS")
mr.write(b"dpib" * 256, 1024)
wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
            sg=[SGE(mr.buf, 1024, mr.lkey)])
wr.set_wr_rdma(mr.rkey, mr.buf + 4096)
qps[0].post_send(wr)
wc = poll(cq)
check(wc.status == e.IBV_WC_SUCCESS and mr.read(1024, 4096) == b"dpib" * 256,
      "RDMA WRITE through pyverbs")
qps[1].post_recv(RecvWR(num_sge=1, sg=[SGE(mr.buf + 6144, 1024, mr.lkey)]))
qps[0].post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[SGE(mr.buf, 100, mr.lkey)]))
got = sorted(poll(cq).opcode for _ in range(2))
check(got == sorted([e.IBV_WC_SEND, e.IBV_WC_RECV]), "SEND and RECV")


def write_through(rkey, off, data):
    mr.write(data, len(data))
    wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(mr.buf, len(data), mr.lkey)])
    wr.set_wr_rdma(rkey, mr.buf + off)
    qps[0].post_send(wr)
    return poll(cq).status


# A type 1 window over [4096, 5120) bound with QP.bind_mw on the QP that
# owns the memory; the peer writes through its rkey, and not past it.
mw1 = MW(pd, e.IBV_MW_TYPE_1)
info = MWBindInfo(mr, mr.buf + 4096, 1024, e.IBV_ACCESS_REMOTE_WRITE)
old = mw1.rkey
qps[1].bind_mw(mw1, MWBind(info, e.IBV_SEND_SIGNALED))
wc = poll(cq)
check(wc.status == e.IBV_WC_SUCCESS and wc.opcode == e.IBV_WC_BIND_MW and
      mw1.rkey != old, "type 1 window bound (rkey %#x -> %#x)" %
      (old, mw1.rkey))
check(write_through(mw1.rkey, 4096 + 512, b"mw1!" * 64) ==
      e.IBV_WC_SUCCESS and mr.read(256, 4096 + 512) == b"mw1!" * 64,
      "RDMA WRITE through the type 1 window")
check(write_through(mw1.rkey, 4096 + 1000, b"x" * 64) ==
      e.IBV_WC_REM_ACCESS_ERR, "a WRITE past the window is refused")
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
