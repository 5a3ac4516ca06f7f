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
 * Lengths and offsets are derived from the masks by ib_opcode_init(), so the
 * table states only what each opcode carries and means.
 */
struct ib_opcode_info ib_opcode[256] = {
	[IB_RC_SEND_FIRST] = { "RC_SEND_FIRST", IB_M_RC | SEND_F | IB_M_FIRST },
	[IB_RC_SEND_MIDDLE] = { "RC_SEND_MIDDLE", IB_M_RC | SEND_F | IB_M_MIDDLE },
	[IB_RC_SEND_LAST] = { "RC_SEND_LAST",
		IB_M_RC | SEND_F | IB_M_LAST | IB_M_COMP },
	[IB_RC_SEND_LAST_IMM] = { "RC_SEND_LAST_WITH_IMMEDIATE",
		IB_M_RC | SEND_F | IB_M_LAST | IB_M_COMP | IB_M_IMMDT },
	[IB_RC_SEND_ONLY] = { "RC_SEND_ONLY",
		IB_M_RC | SEND_F | IB_M_ONLY | IB_M_COMP },
	[IB_RC_SEND_ONLY_IMM] = { "RC_SEND_ONLY_WITH_IMMEDIATE",
		IB_M_RC | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_IMMDT },
	[IB_RC_WRITE_FIRST] = { "RC_RDMA_WRITE_FIRST",
		IB_M_RC | WRITE_F | IB_M_FIRST | IB_M_RETH },
	[IB_RC_WRITE_MIDDLE] = { "RC_RDMA_WRITE_MIDDLE",
		IB_M_RC | WRITE_F | IB_M_MIDDLE },
	[IB_RC_WRITE_LAST] = { "RC_RDMA_WRITE_LAST", IB_M_RC | WRITE_F | IB_M_LAST },
	[IB_RC_WRITE_LAST_IMM] = { "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
		IB_M_RC | WRITE_F | IB_M_LAST | IB_M_IMMDT | IB_M_COMP },
	[IB_RC_WRITE_ONLY] = { "RC_RDMA_WRITE_ONLY",
		IB_M_RC | WRITE_F | IB_M_ONLY | IB_M_RETH },
	[IB_RC_WRITE_ONLY_IMM] = { "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		IB_M_RC | WRITE_F | IB_M_ONLY | IB_M_RETH | IB_M_IMMDT |
		IB_M_COMP },
	[IB_RC_READ_REQUEST] = { "RC_RDMA_READ_REQUEST",
		IB_M_RC | IB_M_REQ | IB_M_READ | IB_M_ONLY | IB_M_RETH },
	[IB_RC_READ_RESPONSE_FIRST] = { "RC_RDMA_READ_RESPONSE_FIRST",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_FIRST |
		IB_M_AETH },
	[IB_RC_READ_RESPONSE_MIDDLE] = { "RC_RDMA_READ_RESPONSE_MIDDLE",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_MIDDLE },
	[IB_RC_READ_RESPONSE_LAST] = { "RC_RDMA_READ_RESPONSE_LAST",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_LAST |
		IB_M_AETH },
	[IB_RC_READ_RESPONSE_ONLY] = { "RC_RDMA_READ_RESPONSE_ONLY",
		IB_M_RC | IB_M_RESP | IB_M_READ | IB_M_PAYLOAD | IB_M_ONLY |
		IB_M_AETH },
	[IB_RC_ACKNOWLEDGE] = { "RC_ACKNOWLEDGE",
		IB_M_RC | IB_M_RESP | IB_M_ONLY | IB_M_AETH },
	[IB_RC_ATOMIC_ACKNOWLEDGE] = { "RC_ATOMIC_ACKNOWLEDGE",
		IB_M_RC | IB_M_RESP | IB_M_ATOMIC | IB_M_ONLY | IB_M_AETH |
		IB_M_ATMACK },
	[IB_RC_COMPARE_SWAP] = { "RC_COMPARE_SWAP",
		IB_M_RC | IB_M_REQ | IB_M_ATOMIC | IB_M_ONLY | IB_M_ATMETH },
	[IB_RC_FETCH_ADD] = { "RC_FETCH_ADD",
		IB_M_RC | IB_M_REQ | IB_M_ATOMIC | IB_M_ONLY | IB_M_ATMETH },
	[IB_RC_SEND_LAST_INV] = { "RC_SEND_LAST_WITH_INVALIDATE",
		IB_M_RC | SEND_F | IB_M_LAST | IB_M_COMP | IB_M_IETH },
	[IB_RC_SEND_ONLY_INV] = { "RC_SEND_ONLY_WITH_INVALIDATE",
		IB_M_RC | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_IETH },
	/* IBA 1.5: an 8-byte write executed as one store, acknowledged like
	 * an RDMA WRITE but holding a responder resource like READ.
	 */
	[IB_RC_ATOMIC_WRITE] = { "RC_ATOMIC_WRITE",
		IB_M_RC | IB_M_REQ | IB_M_ATOMIC_WR | IB_M_ONLY | IB_M_RETH |
		IB_M_PAYLOAD },

	[IB_UC_SEND_FIRST] = { "UC_SEND_FIRST", IB_M_UC | SEND_F | IB_M_FIRST },
	[IB_UC_SEND_MIDDLE] = { "UC_SEND_MIDDLE", IB_M_UC | SEND_F | IB_M_MIDDLE },
	[IB_UC_SEND_LAST] = { "UC_SEND_LAST",
		IB_M_UC | SEND_F | IB_M_LAST | IB_M_COMP },
	[IB_UC_SEND_LAST_IMM] = { "UC_SEND_LAST_WITH_IMMEDIATE",
		IB_M_UC | SEND_F | IB_M_LAST | IB_M_COMP | IB_M_IMMDT },
	[IB_UC_SEND_ONLY] = { "UC_SEND_ONLY",
		IB_M_UC | SEND_F | IB_M_ONLY | IB_M_COMP },
	[IB_UC_SEND_ONLY_IMM] = { "UC_SEND_ONLY_WITH_IMMEDIATE",
		IB_M_UC | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_IMMDT },
	[IB_UC_WRITE_FIRST] = { "UC_RDMA_WRITE_FIRST",
		IB_M_UC | WRITE_F | IB_M_FIRST | IB_M_RETH },
	[IB_UC_WRITE_MIDDLE] = { "UC_RDMA_WRITE_MIDDLE",
		IB_M_UC | WRITE_F | IB_M_MIDDLE },
	[IB_UC_WRITE_LAST] = { "UC_RDMA_WRITE_LAST", IB_M_UC | WRITE_F | IB_M_LAST },
	[IB_UC_WRITE_LAST_IMM] = { "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
		IB_M_UC | WRITE_F | IB_M_LAST | IB_M_IMMDT | IB_M_COMP },
	[IB_UC_WRITE_ONLY] = { "UC_RDMA_WRITE_ONLY",
		IB_M_UC | WRITE_F | IB_M_ONLY | IB_M_RETH },
	[IB_UC_WRITE_ONLY_IMM] = { "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		IB_M_UC | WRITE_F | IB_M_ONLY | IB_M_RETH | IB_M_IMMDT |
		IB_M_COMP },

	[IB_UD_SEND_ONLY] = { "UD_SEND_ONLY",
		IB_M_UD | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_DETH },
	[IB_UD_SEND_ONLY_IMM] = { "UD_SEND_ONLY_WITH_IMMEDIATE",
		IB_M_UD | SEND_F | IB_M_ONLY | IB_M_COMP | IB_M_DETH |
		IB_M_IMMDT },

	/* Congestion notification (RoCEv2 Annex A17.9.3): 16 reserved bytes. */
	[IB_CNP] = { "CNP", IB_M_CNP },
};

RTE_INIT(ib_opcode_init)
{
	unsigned int op, h;

	for (op = 0; op < RTE_DIM(ib_opcode); op++) {
		struct ib_opcode_info *info = &ib_opcode[op];
		uint8_t off = IB_BTH_LEN;

		if (info->mask == 0)
			continue;
		for (h = 0; h < IB_HDR_NUM; h++) {
			info->offset[h] = off;
			if (info->mask & (1u << h))
				off += ib_hdr_len[h];
		}
		if (info->mask & IB_M_CNP)
			off += 16;
		info->length = off;
	}
}

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
