/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#include <rte_common.h>
#include <infiniband/verbs.h>

#include "ib_opcode.h"
#include "ib_wire.h"

const uint8_t ib_hdr_len[IB_HDR_NUM] = {
	[IB_HDR_DETH]	= IB_DETH_LEN,
	[IB_HDR_RETH]	= IB_RETH_LEN,
	[IB_HDR_ATMETH]	= IB_ATMETH_LEN,
	[IB_HDR_AETH]	= IB_AETH_LEN,
	[IB_HDR_ATMACK]	= IB_ATMACK_LEN,
	[IB_HDR_IMMDT]	= IB_IMMDT_LEN,
	[IB_HDR_IETH]	= IB_IETH_LEN,
	[IB_HDR_PAYLOAD] = 0,
};

#define SEND_F	(IB_M_REQ | IB_M_SEND | IB_M_PAYLOAD)
#define WRITE_F	(IB_M_REQ | IB_M_WRITE | IB_M_PAYLOAD)

/*
 * Each entry states what its opcode carries and means; the offsets of its
 * headers and their total length follow from that mask at compile time
 * (headers in the order of enum ib_hdr, IBA 9.2; a CNP's 16 reserved bytes
 * after the BTH), and so does IB_M_RWQE.
 */
#define HL(m, h, len)	(((m) & (1u << (h))) ? (len) : 0)
#define OFF_DETH(m)	IB_BTH_LEN
#define OFF_RETH(m)	(OFF_DETH(m) + HL(m, IB_HDR_DETH, IB_DETH_LEN))
#define OFF_ATMETH(m)	(OFF_RETH(m) + HL(m, IB_HDR_RETH, IB_RETH_LEN))
#define OFF_AETH(m)	\
	(OFF_ATMETH(m) + HL(m, IB_HDR_ATMETH, IB_ATMETH_LEN))
#define OFF_ATMACK(m)	(OFF_AETH(m) + HL(m, IB_HDR_AETH, IB_AETH_LEN))
#define OFF_IMMDT(m)	\
	(OFF_ATMACK(m) + HL(m, IB_HDR_ATMACK, IB_ATMACK_LEN))
#define OFF_IETH(m)	(OFF_IMMDT(m) + HL(m, IB_HDR_IMMDT, IB_IMMDT_LEN))
#define OFF_PAYLOAD(m)	(OFF_IETH(m) + HL(m, IB_HDR_IETH, IB_IETH_LEN))
#define HDRS_LEN(m)	(OFF_PAYLOAD(m) + (((m) & IB_M_CNP) ? 16 : 0))
/* A receive WQE is taken by the first packet of a SEND and by the packet
 * of an RDMA WRITE that carries the immediate.
 */
#define RWQE(m)		(((((m) & IB_M_SEND) && ((m) & IB_M_FIRST)) || \
			  (((m) & IB_M_WRITE) && ((m) & IB_M_IMMDT))) ? \
			 IB_M_RWQE : 0)
#define OP(n, m) { .name = (n), .mask = (m) | RWQE(m), \
	.length = HDRS_LEN(m), .offset = { \
		[IB_HDR_DETH] = OFF_DETH(m), [IB_HDR_RETH] = OFF_RETH(m), \
		[IB_HDR_ATMETH] = OFF_ATMETH(m), [IB_HDR_AETH] = OFF_AETH(m), \
		[IB_HDR_ATMACK] = OFF_ATMACK(m), \
		[IB_HDR_IMMDT] = OFF_IMMDT(m), [IB_HDR_IETH] = OFF_IETH(m), \
		[IB_HDR_PAYLOAD] = OFF_PAYLOAD(m) } }

const struct ib_opcode_info ib_opcode[256] = {
	[IB_RC_SEND_FIRST] = OP("RC_SEND_FIRST", IB_M_RC | SEND_F | IB_M_FIRST),
	[IB_RC_SEND_MIDDLE] = OP("RC_SEND_MIDDLE",
		IB_M_RC | SEND_F | IB_M_MIDDLE),
	[IB_RC_SEND_LAST] = OP("RC_SEND_LAST",
		IB_M_RC | SEND_F | IB_M_LAST | IB_M_COMP),
	[IB_RC_SEND_LAST_IMM] = OP("RC_SEND_LAST_WITH_IMMEDIATE",
		IB_M_RC | SEND_F | IB_M_LAST | IB_M_COMP | IB_M_IMMDT),
	[IB_RC_SEND_ONLY] = OP("RC_SEND_ONLY",
		IB_M_RC | SEND_F | IB_M_ONLY | IB_M_COMP),
	[IB_RC_SEND_ONLY_IMM] = OP("RC_SEND_ONLY_WITH_IMMEDIATE",
		IB_M_RC | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_IMMDT),
	[IB_RC_WRITE_FIRST] = OP("RC_RDMA_WRITE_FIRST",
		IB_M_RC | WRITE_F | IB_M_FIRST | IB_M_RETH),
	[IB_RC_WRITE_MIDDLE] = OP("RC_RDMA_WRITE_MIDDLE",
		IB_M_RC | WRITE_F | IB_M_MIDDLE),
	[IB_RC_WRITE_LAST] = OP("RC_RDMA_WRITE_LAST",
		IB_M_RC | WRITE_F | IB_M_LAST),
	[IB_RC_WRITE_LAST_IMM] = OP("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
		IB_M_RC | WRITE_F | IB_M_LAST | IB_M_IMMDT | IB_M_COMP),
	[IB_RC_WRITE_ONLY] = OP("RC_RDMA_WRITE_ONLY",
		IB_M_RC | WRITE_F | IB_M_ONLY | IB_M_RETH),
	[IB_RC_WRITE_ONLY_IMM] = OP("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		IB_M_RC | WRITE_F | IB_M_ONLY | IB_M_RETH | IB_M_IMMDT |
		IB_M_COMP),
	[IB_RC_READ_REQUEST] = OP("RC_RDMA_READ_REQUEST",
		IB_M_RC | IB_M_REQ | IB_M_READ | IB_M_ONLY | IB_M_RETH),
	[IB_RC_READ_RESPONSE_FIRST] = OP("RC_RDMA_READ_RESPONSE_FIRST",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_FIRST |
		IB_M_AETH),
	[IB_RC_READ_RESPONSE_MIDDLE] = OP("RC_RDMA_READ_RESPONSE_MIDDLE",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_MIDDLE),
	[IB_RC_READ_RESPONSE_LAST] = OP("RC_RDMA_READ_RESPONSE_LAST",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_LAST |
		IB_M_AETH),
	[IB_RC_READ_RESPONSE_ONLY] = OP("RC_RDMA_READ_RESPONSE_ONLY",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_ONLY |
		IB_M_AETH),
	[IB_RC_ACKNOWLEDGE] = OP("RC_ACKNOWLEDGE",
		IB_M_RC | IB_M_RESP | IB_M_ONLY | IB_M_AETH),
	[IB_RC_ATOMIC_ACKNOWLEDGE] = OP("RC_ATOMIC_ACKNOWLEDGE",
		IB_M_RC | IB_M_RESP | IB_M_ATOMIC | IB_M_ONLY | IB_M_AETH |
		IB_M_ATMACK),
	[IB_RC_COMPARE_SWAP] = OP("RC_COMPARE_SWAP",
		IB_M_RC | IB_M_REQ | IB_M_ATOMIC | IB_M_ONLY | IB_M_ATMETH),
	[IB_RC_FETCH_ADD] = OP("RC_FETCH_ADD",
		IB_M_RC | IB_M_REQ | IB_M_ATOMIC | IB_M_ONLY | IB_M_ATMETH),
	[IB_RC_SEND_LAST_INV] = OP("RC_SEND_LAST_WITH_INVALIDATE",
		IB_M_RC | SEND_F | IB_M_LAST | IB_M_COMP | IB_M_IETH),
	[IB_RC_SEND_ONLY_INV] = OP("RC_SEND_ONLY_WITH_INVALIDATE",
		IB_M_RC | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_IETH),
	/* IBA 1.5: an 8-byte write executed as one store, acknowledged like
	 * an RDMA WRITE but holding a responder resource like READ.
	 */
	[IB_RC_ATOMIC_WRITE] = OP("RC_ATOMIC_WRITE",
		IB_M_RC | IB_M_REQ | IB_M_ATOMIC_WR | IB_M_ONLY | IB_M_RETH |
		IB_M_PAYLOAD),

	[IB_UC_SEND_FIRST] = OP("UC_SEND_FIRST", IB_M_UC | SEND_F | IB_M_FIRST),
	[IB_UC_SEND_MIDDLE] = OP("UC_SEND_MIDDLE",
		IB_M_UC | SEND_F | IB_M_MIDDLE),
	[IB_UC_SEND_LAST] = OP("UC_SEND_LAST",
		IB_M_UC | SEND_F | IB_M_LAST | IB_M_COMP),
	[IB_UC_SEND_LAST_IMM] = OP("UC_SEND_LAST_WITH_IMMEDIATE",
		IB_M_UC | SEND_F | IB_M_LAST | IB_M_COMP | IB_M_IMMDT),
	[IB_UC_SEND_ONLY] = OP("UC_SEND_ONLY",
		IB_M_UC | SEND_F | IB_M_ONLY | IB_M_COMP),
	[IB_UC_SEND_ONLY_IMM] = OP("UC_SEND_ONLY_WITH_IMMEDIATE",
		IB_M_UC | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_IMMDT),
	[IB_UC_WRITE_FIRST] = OP("UC_RDMA_WRITE_FIRST",
		IB_M_UC | WRITE_F | IB_M_FIRST | IB_M_RETH),
	[IB_UC_WRITE_MIDDLE] = OP("UC_RDMA_WRITE_MIDDLE",
		IB_M_UC | WRITE_F | IB_M_MIDDLE),
	[IB_UC_WRITE_LAST] = OP("UC_RDMA_WRITE_LAST",
		IB_M_UC | WRITE_F | IB_M_LAST),
	[IB_UC_WRITE_LAST_IMM] = OP("UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
		IB_M_UC | WRITE_F | IB_M_LAST | IB_M_IMMDT | IB_M_COMP),
	[IB_UC_WRITE_ONLY] = OP("UC_RDMA_WRITE_ONLY",
		IB_M_UC | WRITE_F | IB_M_ONLY | IB_M_RETH),
	[IB_UC_WRITE_ONLY_IMM] = OP("UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		IB_M_UC | WRITE_F | IB_M_ONLY | IB_M_RETH | IB_M_IMMDT |
		IB_M_COMP),

	[IB_UD_SEND_ONLY] = OP("UD_SEND_ONLY",
		IB_M_UD | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_DETH),
	[IB_UD_SEND_ONLY_IMM] = OP("UD_SEND_ONLY_WITH_IMMEDIATE",
		IB_M_UD | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_DETH |
		IB_M_IMMDT),

	/* Congestion notification (RoCEv2 Annex A17.9.3): 16 reserved bytes. */
	[IB_CNP] = OP("CNP", IB_M_CNP),
};

/* ibv_post_send(3), table 1: the operations each service type supports. */
static const uint32_t wr_ops_by_qpt[] = {
	[IBV_QPT_RC] = 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM |
		1u << IBV_WR_RDMA_WRITE | 1u << IBV_WR_RDMA_WRITE_WITH_IMM |
		1u << IBV_WR_RDMA_READ | 1u << IBV_WR_ATOMIC_CMP_AND_SWP |
		1u << IBV_WR_ATOMIC_FETCH_AND_ADD | 1u << IBV_WR_LOCAL_INV |
		1u << IBV_WR_BIND_MW | 1u << IBV_WR_SEND_WITH_INV |
		1u << IBV_WR_ATOMIC_WRITE,
	/* The table also lists SEND_WITH_INV for UC, but IBA defines no UC
	 * opcode that carries an IETH: dpib refuses it there (EINVAL).
	 */
	[IBV_QPT_UC] = 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM |
		1u << IBV_WR_RDMA_WRITE | 1u << IBV_WR_RDMA_WRITE_WITH_IMM |
		1u << IBV_WR_LOCAL_INV | 1u << IBV_WR_BIND_MW,
	[IBV_QPT_UD] = 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM,
};

int
ib_wr_opcode_valid(int qp_type, int wr_opcode)
{
	if (qp_type < 0 || (unsigned int)qp_type >= RTE_DIM(wr_ops_by_qpt) ||
	    wr_opcode < 0 || wr_opcode >= 32)
		return 0;
	return !!(wr_ops_by_qpt[qp_type] & (1u << wr_opcode));
}
