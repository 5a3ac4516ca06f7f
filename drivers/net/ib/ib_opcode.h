/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_OPCODE_H
#define IB_OPCODE_H

/*
 * The protocol as data: what each BTH opcode carries (IBA 9.2, table 38) and
 * which work-request opcodes each QP type allows (verbs ibv_post_send table).
 */

#include <stdint.h>
#include <infiniband/verbs.h>

enum ib_opcode {
	IB_RC_SEND_FIRST		= 0x00,
	IB_RC_SEND_MIDDLE		= 0x01,
	IB_RC_SEND_LAST			= 0x02,
	IB_RC_SEND_LAST_IMM		= 0x03,
	IB_RC_SEND_ONLY			= 0x04,
	IB_RC_SEND_ONLY_IMM		= 0x05,
	IB_RC_WRITE_FIRST		= 0x06,
	IB_RC_WRITE_MIDDLE		= 0x07,
	IB_RC_WRITE_LAST		= 0x08,
	IB_RC_WRITE_LAST_IMM		= 0x09,
	IB_RC_WRITE_ONLY		= 0x0a,
	IB_RC_WRITE_ONLY_IMM		= 0x0b,
	IB_RC_READ_REQUEST		= 0x0c,
	IB_RC_READ_RESPONSE_FIRST	= 0x0d,
	IB_RC_READ_RESPONSE_MIDDLE	= 0x0e,
	IB_RC_READ_RESPONSE_LAST	= 0x0f,
	IB_RC_READ_RESPONSE_ONLY	= 0x10,
	IB_RC_ACKNOWLEDGE		= 0x11,
	IB_RC_ATOMIC_ACKNOWLEDGE	= 0x12,
	IB_RC_COMPARE_SWAP		= 0x13,
	IB_RC_FETCH_ADD			= 0x14,
	IB_RC_SEND_LAST_INV		= 0x16,
	IB_RC_SEND_ONLY_INV		= 0x17,
	IB_RC_ATOMIC_WRITE		= 0x1d,	/* IBA 1.5 */

	IB_UC_SEND_FIRST		= 0x20,
	IB_UC_SEND_MIDDLE		= 0x21,
	IB_UC_SEND_LAST			= 0x22,
	IB_UC_SEND_LAST_IMM		= 0x23,
	IB_UC_SEND_ONLY			= 0x24,
	IB_UC_SEND_ONLY_IMM		= 0x25,
	IB_UC_WRITE_FIRST		= 0x26,
	IB_UC_WRITE_MIDDLE		= 0x27,
	IB_UC_WRITE_LAST		= 0x28,
	IB_UC_WRITE_LAST_IMM		= 0x29,
	IB_UC_WRITE_ONLY		= 0x2a,
	IB_UC_WRITE_ONLY_IMM		= 0x2b,

	IB_UD_SEND_ONLY			= 0x64,
	IB_UD_SEND_ONLY_IMM		= 0x65,

	IB_CNP				= 0x81,
};

/* Which headers follow the BTH, in wire order (IBA 9.2). */
enum ib_hdr {
	IB_HDR_DETH,
	IB_HDR_RETH,
	IB_HDR_ATMETH,
	IB_HDR_AETH,
	IB_HDR_ATMACK,
	IB_HDR_IMMDT,
	IB_HDR_IETH,
	IB_HDR_PAYLOAD,
	IB_HDR_NUM,
};

enum ib_opmask {
	IB_M_DETH	= 1u << IB_HDR_DETH,
	IB_M_RETH	= 1u << IB_HDR_RETH,
	IB_M_ATMETH	= 1u << IB_HDR_ATMETH,
	IB_M_AETH	= 1u << IB_HDR_AETH,
	IB_M_ATMACK	= 1u << IB_HDR_ATMACK,
	IB_M_IMMDT	= 1u << IB_HDR_IMMDT,
	IB_M_IETH	= 1u << IB_HDR_IETH,
	IB_M_PAYLOAD	= 1u << IB_HDR_PAYLOAD,

	IB_M_REQ	= 1u << 10,	/* requester -> responder */
	IB_M_RESP	= 1u << 11,	/* responder -> requester */
	IB_M_SEND	= 1u << 12,
	IB_M_WRITE	= 1u << 13,
	IB_M_READ	= 1u << 14,
	IB_M_ATOMIC	= 1u << 15,
	IB_M_FIRST	= 1u << 16,
	IB_M_MIDDLE	= 1u << 17,
	IB_M_LAST	= 1u << 18,
	IB_M_ONLY	= IB_M_FIRST | IB_M_LAST,
	IB_M_COMP	= 1u << 19,	/* consumes a receive WQE when done */
	IB_M_RC		= 1u << 20,
	IB_M_UC		= 1u << 21,
	IB_M_UD		= 1u << 22,
	IB_M_CNP	= 1u << 23,
	IB_M_ATOMIC_WR	= 1u << 24,	/* ATOMIC WRITE */
	IB_M_RWQE	= 1u << 25,	/* takes a receive WQE (responder) */
};

struct ib_opcode_info {
	const char *name;
	uint32_t mask;
	uint8_t length;			/* BTH + extension headers */
	uint8_t offset[IB_HDR_NUM];	/* from the start of the BTH */
};

extern const struct ib_opcode_info ib_opcode[256];

/* Lengths of the headers of enum ib_hdr, payload excluded. */
extern const uint8_t ib_hdr_len[IB_HDR_NUM];

/* Work-request opcodes (enum ibv_wr_opcode) allowed per QP type. */
int ib_wr_opcode_valid(int qp_type, int wr_opcode);

/* Work requests that hold a READ/atomic credit (max_rd_atomic), ATOMIC
 * WRITE included.
 */
static inline int
ib_wr_is_read_atomic(uint32_t opcode)
{
	return opcode == IBV_WR_RDMA_READ ||
	       opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       opcode == IBV_WR_ATOMIC_WRITE;
}

/* Work requests answered with data, which lands in their local buffers:
 * READ and the two atomics.
 */
static inline int
ib_wr_gets_data(uint32_t opcode)
{
	return opcode == IBV_WR_RDMA_READ ||
	       opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

#endif /* IB_OPCODE_H */
