/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The CM message codec (lib/rdmacm/cm_msg.c) against three kinds of
 * evidence:
 *  - itself: every message survives pack then unpack, and with every
 *    member all ones the packed data area holds exactly as many set bits
 *    as the spec's table has field bits (no overlap, nothing spilled into
 *    reserved bits);
 *  - the IBA tables: bytes of packed REQ, REP, REJ, DREQ (and the others'
 *    bit fields) computed by hand from the tables of IBA 12.6 and 12.11;
 *  - tshark (`test_cm_msg --tshark DIR`): the messages in RoCEv2 frames
 *    decoded by Wireshark's InfiniBand dissector, an implementation that
 *    shares nothing with ours.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "cm_msg.h"

#define TID		UINT64_C(0x0123456789abcdef)
#define TSHARK		"/usr/bin/tshark"

/* Distinct bytes, so a private data or GID copied off by one shows. */
static void
fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13);
}

static void
path_fill(struct cm_req_path *p, int alt)
{
	p->local_lid = alt ? 0xe1e2 : 0xa1a2;
	p->remote_lid = alt ? 0xf1f2 : 0xb1b2;
	fill(p->local_gid, 16, alt ? 0x40 : 0x20);
	fill(p->remote_gid, 16, alt ? 0x50 : 0x30);
	p->flow_label = alt ? 0x9abcd : 0xfedcb;
	p->packet_rate = alt ? 0x3e : 0x2b;
	p->traffic_class = alt ? 0xa7 : 0xc5;
	p->hop_limit = alt ? 0x96 : 0x8e;
	p->sl = alt ? 0xe : 0xd;
	p->subnet_local = 1;
	p->local_ack_timeout = alt ? 0x1e : 0x13;
}

static void
req_fill(struct cm_req *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0x11223344;
	m->service_id = UINT64_C(0x0102030405060708);
	m->local_ca_guid = UINT64_C(0x1112131415161718);
	m->local_qkey = 0x21222324;
	m->local_qpn = 0x123456;
	m->responder_resources = 0x9a;
	m->local_eecn = 0xabcdef;
	m->initiator_depth = 0xbc;
	m->remote_eecn = 0xfedcba;
	m->remote_cm_response_timeout = 0x15;
	m->transport_service_type = CM_TST_RD;
	m->end_to_end_flow_control = 1;
	m->starting_psn = 0x876543;
	m->local_cm_response_timeout = 0x1f;
	m->retry_count = 5;
	m->partition_key = 0xc1c2;
	m->path_mtu = 0xb;
	m->rdc_exists = 1;
	m->rnr_retry_count = 6;
	m->max_cm_retries = 0xd;
	m->srq = 1;
	m->extended_transport_type = 7;
	path_fill(&m->primary, 0);
	path_fill(&m->alternate, 1);
	fill(m->private_data, CM_REQ_PDATA, 0x80);
	m->ece_vendor_id = 0x02c9a5;
	m->ece_options = 0x0b0c0d0e;
}

static void
mra_fill(struct cm_mra *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0x81828384;
	m->remote_comm_id = 0x91929394;
	m->message_mraed = CM_MRA_LAP;
	m->service_timeout = 0x1f;
	fill(m->private_data, CM_MRA_PDATA, 0x11);
}

static void
rej_fill(struct cm_rej *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0x71727374;
	m->remote_comm_id = 0x51525354;
	m->message_rejected = CM_REJ_OTHER;
	m->ari_length = CM_REJ_ARI;
	m->reason = 0xa01c;
	fill(m->ari, CM_REJ_ARI, 0x22);
	fill(m->private_data, CM_REJ_PDATA, 0x33);
}

static void
rep_fill(struct cm_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0x51525354;
	m->remote_comm_id = 0x11223344;
	m->local_qkey = 0x61626364;
	m->local_qpn = 0x9abcde;
	m->local_eecn = 0xa5a6a7;
	m->starting_psn = 0xc0ffee;
	m->responder_resources = 0x8a;
	m->initiator_depth = 0xfb;
	m->target_ack_delay = 0x15;
	m->failover_accepted = 2;
	m->end_to_end_flow_control = 1;
	m->rnr_retry_count = 7;
	m->srq = 1;
	m->local_ca_guid = UINT64_C(0x8877665544332211);
	fill(m->private_data, CM_REP_PDATA, 0x44);
	m->ece_vendor_id = 0x1d2e3f;
	m->ece_options = 0x5a6b7c8d;
}

static void
rtu_fill(struct cm_rtu *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0xe1e2e3e4;
	m->remote_comm_id = 0xf1f2f3f4;
	fill(m->private_data, CM_RTU_PDATA, 0x55);
}

static void
dreq_fill(struct cm_dreq *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0xa1a2a3a4;
	m->remote_comm_id = 0xb1b2b3b4;
	m->remote_qpn = 0xfedcba;
	fill(m->private_data, CM_DREQ_PDATA, 0x66);
}

static void
drep_fill(struct cm_drep *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = 0xc1c2c3c4;
	m->remote_comm_id = 0xd1d2d3d4;
	fill(m->private_data, CM_DREP_PDATA, 0x77);
}

static void
sidr_req_fill(struct cm_sidr_req *m)
{
	memset(m, 0, sizeof(*m));
	m->request_id = 0x8a8b8c8d;
	m->partition_key = 0x8001;
	m->service_id = UINT64_C(0x9f8e7d6c5b4a3928);
	fill(m->private_data, CM_SIDR_REQ_PDATA, 0x88);
}

static void
sidr_rep_fill(struct cm_sidr_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->request_id = 0x9a9b9c9d;
	m->status = 0x85;
	m->add_info_length = CM_SIDR_REP_INFO;
	m->qpn = 0xbcdef1;
	m->service_id = UINT64_C(0xf7e6d5c4b3a29180);
	m->qkey = 0xf1e2d3c4;
	fill(m->add_info, CM_SIDR_REP_INFO, 0x99);
	fill(m->private_data, CM_SIDR_REP_PDATA, 0xaa);
}

static unsigned int
data_bits_set(const uint8_t *mad)
{
	unsigned int i, n = 0;

	for (i = CM_MAD_HDR_LEN; i < CM_MAD_LEN; i++)
		n += __builtin_popcount(mad[i]);
	return n;
}

/*
 * The header every pack writes (IBA 13.4.2), attribute @attr, attribute
 * modifier @mod (the ECE options of a REQ or REP, 0 in any other).
 */
static void
check_hdr_mod(const uint8_t *mad, uint16_t attr, uint32_t mod)
{
	const uint8_t want[CM_MAD_HDR_LEN] = {
		0x01, 0x07, 0x02, 0x03, 0, 0, 0, 0,
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
		attr >> 8, attr & 0xff, 0, 0,
		mod >> 24, (mod >> 16) & 0xff, (mod >> 8) & 0xff, mod & 0xff,
	};
	unsigned int i;

	for (i = 0; i < CM_MAD_HDR_LEN; i++)
		CHECK(mad[i] == want[i], "header byte %u: 0x%02x, want 0x%02x",
		      i, mad[i], want[i]);
}

static void
check_hdr(const uint8_t *mad, uint16_t attr)
{
	check_hdr_mod(mad, attr, 0);
}

/*
 * Pack, check the header, unpack, compare; then pack the message with
 * every member all ones and count the data area's set bits against the
 * sum of the table's field widths (@bits).
 */
#define ROUNDTRIP(type, fillfn, attr, bits, ones_rc) \
	ROUNDTRIP_MOD(type, fillfn, attr, bits, ones_rc, 0, 0)
#define ROUNDTRIP_MOD(type, fillfn, attr, bits, ones_rc, mod, ones_mod) do { \
	struct cm_##type a, b; \
	uint8_t mad[CM_MAD_LEN]; \
	fillfn(&a); \
	memset(mad, 0xee, sizeof(mad)); \
	cm_##type##_pack(&a, TID, mad); \
	check_hdr_mod(mad, attr, mod); \
	CHECK(cm_##type##_unpack(mad, &b) == 0, #type " unpack"); \
	CHECK(memcmp(&a, &b, sizeof(a)) == 0, #type " differs after unpack"); \
	memset(&a, 0xff, sizeof(a)); \
	cm_##type##_pack(&a, TID, mad); \
	check_hdr_mod(mad, attr, ones_mod); \
	CHECK(data_bits_set(mad) == (bits), #type " all ones: %u bits set," \
	      " the table has %u", data_bits_set(mad), (unsigned int)(bits)); \
	CHECK(cm_##type##_unpack(mad, &b) == (ones_rc), #type " rc"); \
} while (0)

/*
 * IBA Table 99: the 52 bytes before the paths hold 8 reserved bytes (3 of
 * them the Linux CM's ECE vendor ID), each 44-byte path 12 reserved bits.
 */
#define REQ_PATH_BITS	(16 + 16 + 128 + 128 + 20 + 6 + 8 + 8 + 4 + 1 + 5)
#define REQ_BITS	(32 + 24 + 64 + 64 + 32 + 24 + 8 + 24 + 8 + 24 + 5 + 2 + \
			 1 + 24 + 5 + 3 + 16 + 4 + 1 + 3 + 4 + 1 + 3 + \
			 2 * REQ_PATH_BITS + CM_REQ_PDATA * 8)

static void
roundtrip_every_message(void)
{
	ROUNDTRIP_MOD(req, req_fill, CM_ATTR_REQ, REQ_BITS, 0, 0x0b0c0d0e,
		      0xffffffff);
	ROUNDTRIP(mra, mra_fill, CM_ATTR_MRA,
		  32 + 32 + 2 + 5 + CM_MRA_PDATA * 8, 0);
	/* All ones claims 127 bytes of ARI: refused, as documented. */
	ROUNDTRIP(rej, rej_fill, CM_ATTR_REJ,
		  32 + 32 + 2 + 7 + 16 + (CM_REJ_ARI + CM_REJ_PDATA) * 8,
		  -EINVAL);
	ROUNDTRIP_MOD(rep, rep_fill, CM_ATTR_REP,
		      32 + 32 + 32 + 24 + 24 + 24 + 24 + 8 + 8 + 5 + 2 + 1 + 3 +
		      1 + 64 + CM_REP_PDATA * 8, 0, 0x5a6b7c8d, 0xffffffff);
	ROUNDTRIP(rtu, rtu_fill, CM_ATTR_RTU, 32 + 32 + CM_RTU_PDATA * 8, 0);
	ROUNDTRIP(dreq, dreq_fill, CM_ATTR_DREQ,
		  32 + 32 + 24 + CM_DREQ_PDATA * 8, 0);
	ROUNDTRIP(drep, drep_fill, CM_ATTR_DREP, 32 + 32 + CM_DREP_PDATA * 8, 0);
	ROUNDTRIP(sidr_req, sidr_req_fill, CM_ATTR_SIDR_REQ,
		  32 + 16 + 64 + CM_SIDR_REQ_PDATA * 8, 0);
	ROUNDTRIP(sidr_rep, sidr_rep_fill, CM_ATTR_SIDR_REP,
		  32 + 8 + 8 + 24 + 64 + 32 +
		  (CM_SIDR_REP_INFO + CM_SIDR_REP_PDATA) * 8, -EINVAL);
}

/* @n bytes at data offset @off are @want. */
static void
check_bytes(const uint8_t *mad, unsigned int off, const uint8_t *want,
	    unsigned int n, const char *what)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		CHECK(mad[CM_MAD_HDR_LEN + off + i] == want[i],
		      "%s: data byte %u is 0x%02x, want 0x%02x", what, off + i,
		      mad[CM_MAD_HDR_LEN + off + i], want[i]);
}

static void
check_pattern(const uint8_t *mad, unsigned int off, unsigned int n,
	      uint8_t seed, const char *what)
{
	uint8_t want[CM_MAD_LEN];

	fill(want, n, seed);
	check_bytes(mad, off, want, n, what);
}

#define BYTES(mad, off, what, ...) do { \
	const uint8_t w_[] = { __VA_ARGS__ }; \
	check_bytes(mad, off, w_, sizeof(w_), what); \
} while (0)

/* IBA Table 99, by hand: the words at 32..51 carry 22 fields. */
static void
req_bytes_match_table(void)
{
	struct cm_req m;
	uint8_t mad[CM_MAD_LEN];

	req_fill(&m);
	cm_req_pack(&m, TID, mad);
	check_hdr_mod(mad, CM_ATTR_REQ, 0x0b0c0d0e);
	BYTES(mad, 0, "local comm ID, reserved, ECE vendor ID", 0x11, 0x22,
	      0x33, 0x44, 0, 0x02, 0xc9, 0xa5);
	BYTES(mad, 8, "service ID", 1, 2, 3, 4, 5, 6, 7, 8);
	BYTES(mad, 16, "local CA GUID, reserved, Q_Key",
	      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
	      0, 0, 0, 0, 0x21, 0x22, 0x23, 0x24);
	BYTES(mad, 32, "local QPN | responder resources",
	      0x12, 0x34, 0x56, 0x9a);
	BYTES(mad, 36, "local EECN | initiator depth", 0xab, 0xcd, 0xef, 0xbc);
	/* 10101 10 1: timeout 0x15, RD, flow control */
	BYTES(mad, 40, "remote EECN | timeout | TST | E2E",
	      0xfe, 0xdc, 0xba, 0xad);
	/* 11111 101: timeout 0x1f, retry 5 */
	BYTES(mad, 44, "PSN | timeout | retry", 0x87, 0x65, 0x43, 0xfd);
	/* 1011 1 110: MTU 0xb, RDC, RNR 6; 1101 1 111: max 0xd, SRQ, ext 7 */
	BYTES(mad, 48, "P_Key | MTU | RDC | RNR | max CM | SRQ | ext",
	      0xc1, 0xc2, 0xbe, 0xdf);
	BYTES(mad, 52, "primary LIDs", 0xa1, 0xa2, 0xb1, 0xb2);
	check_pattern(mad, 56, 16, 0x20, "primary local GID");
	check_pattern(mad, 72, 16, 0x30, "primary remote GID");
	/* flow label 0xfedcb, 6 reserved bits, rate 0x2b */
	BYTES(mad, 88, "primary flow label | rate", 0xfe, 0xdc, 0xb0, 0x2b);
	/* 1101 1 000: SL 0xd, subnet local; 10011 000: ACK timeout 0x13 */
	BYTES(mad, 92, "primary TC | hop | SL | local | ACK timeout",
	      0xc5, 0x8e, 0xd8, 0x98);
	BYTES(mad, 96, "alternate LIDs", 0xe1, 0xe2, 0xf1, 0xf2);
	check_pattern(mad, 100, 16, 0x40, "alternate local GID");
	check_pattern(mad, 116, 16, 0x50, "alternate remote GID");
	BYTES(mad, 132, "alternate flow label | rate", 0x9a, 0xbc, 0xd0, 0x3e);
	BYTES(mad, 136, "alternate TC | hop | SL | local | ACK timeout",
	      0xa7, 0x96, 0xe8, 0xf0);
	check_pattern(mad, 140, CM_REQ_PDATA, 0x80, "private data");
}

/* IBA Table 104. */
static void
rep_bytes_match_table(void)
{
	struct cm_rep m;
	uint8_t mad[CM_MAD_LEN];

	rep_fill(&m);
	cm_rep_pack(&m, TID, mad);
	check_hdr_mod(mad, CM_ATTR_REP, 0x5a6b7c8d);
	BYTES(mad, 0, "comm IDs", 0x51, 0x52, 0x53, 0x54,
	      0x11, 0x22, 0x33, 0x44);
	BYTES(mad, 8, "Q_Key", 0x61, 0x62, 0x63, 0x64);
	BYTES(mad, 12, "QPN, EECN, PSN, each with a byte of the ECE vendor ID",
	      0x9a, 0xbc, 0xde, 0x1d, 0xa5, 0xa6, 0xa7, 0x2e,
	      0xc0, 0xff, 0xee, 0x3f);
	/* 10101 10 1: ACK delay 0x15, failover 2, E2E; 111 1 0000: RNR 7,
	 * SRQ, 4 reserved bits
	 */
	BYTES(mad, 24, "resources | depth | delay | failover | E2E | RNR | SRQ",
	      0x8a, 0xfb, 0xad, 0xf0);
	BYTES(mad, 28, "local CA GUID", 0x88, 0x77, 0x66, 0x55,
	      0x44, 0x33, 0x22, 0x11);
	check_pattern(mad, 36, CM_REP_PDATA, 0x44, "private data");
}

/* IBA Table 101 and the MRA's Table 100, which shares its first word. */
static void
rej_mra_bytes_match_table(void)
{
	struct cm_rej rej;
	struct cm_mra mra;
	uint8_t mad[CM_MAD_LEN];

	rej_fill(&rej);
	cm_rej_pack(&rej, TID, mad);
	check_hdr(mad, CM_ATTR_REJ);
	BYTES(mad, 0, "comm IDs", 0x71, 0x72, 0x73, 0x74,
	      0x51, 0x52, 0x53, 0x54);
	/* 10 000000: message 2; 1001000 0: ARI length 72 */
	BYTES(mad, 8, "message | ARI length | reason", 0x80, 0x90, 0xa0, 0x1c);
	check_pattern(mad, 12, CM_REJ_ARI, 0x22, "ARI");
	check_pattern(mad, 84, CM_REJ_PDATA, 0x33, "private data");
	rej.ari_length = CM_REJ_ARI + 1;
	cm_rej_pack(&rej, TID, mad);
	CHECK(cm_rej_unpack(mad, &rej) == -EINVAL, "73 bytes of ARI taken");

	mra_fill(&mra);
	cm_mra_pack(&mra, TID, mad);
	check_hdr(mad, CM_ATTR_MRA);
	BYTES(mad, 0, "comm IDs", 0x81, 0x82, 0x83, 0x84,
	      0x91, 0x92, 0x93, 0x94);
	/* 10 000000: LAP; 11111 000: timeout 0x1f */
	BYTES(mad, 8, "message | service timeout", 0x80, 0xf8);
	check_pattern(mad, 10, CM_MRA_PDATA, 0x11, "private data");
}

/* DREQ (12.6.10) and the SIDR messages (12.11). */
static void
dreq_sidr_bytes_match_table(void)
{
	struct cm_dreq dreq;
	struct cm_sidr_req sreq;
	struct cm_sidr_rep srep;
	uint8_t mad[CM_MAD_LEN];

	dreq_fill(&dreq);
	cm_dreq_pack(&dreq, TID, mad);
	check_hdr(mad, CM_ATTR_DREQ);
	BYTES(mad, 0, "comm IDs, remote QPN, reserved",
	      0xa1, 0xa2, 0xa3, 0xa4, 0xb1, 0xb2, 0xb3, 0xb4,
	      0xfe, 0xdc, 0xba, 0);
	check_pattern(mad, 12, CM_DREQ_PDATA, 0x66, "private data");

	sidr_req_fill(&sreq);
	cm_sidr_req_pack(&sreq, TID, mad);
	check_hdr(mad, CM_ATTR_SIDR_REQ);
	BYTES(mad, 0, "request ID, P_Key, reserved, service ID",
	      0x8a, 0x8b, 0x8c, 0x8d, 0x80, 0x01, 0, 0,
	      0x9f, 0x8e, 0x7d, 0x6c, 0x5b, 0x4a, 0x39, 0x28);
	check_pattern(mad, 16, CM_SIDR_REQ_PDATA, 0x88, "private data");

	sidr_rep_fill(&srep);
	cm_sidr_rep_pack(&srep, TID, mad);
	check_hdr(mad, CM_ATTR_SIDR_REP);
	BYTES(mad, 0, "request ID, status, info length, reserved, QPN",
	      0x9a, 0x9b, 0x9c, 0x9d, 0x85, 0x48, 0, 0,
	      0xbc, 0xde, 0xf1, 0);
	BYTES(mad, 12, "service ID, Q_Key",
	      0xf7, 0xe6, 0xd5, 0xc4, 0xb3, 0xa2, 0x91, 0x80,
	      0xf1, 0xe2, 0xd3, 0xc4);
	check_pattern(mad, 24, CM_SIDR_REP_INFO, 0x99, "additional info");
	check_pattern(mad, 96, CM_SIDR_REP_PDATA, 0xaa, "private data");
	srep.add_info_length = CM_SIDR_REP_INFO + 1;
	cm_sidr_rep_pack(&srep, TID, mad);
	CHECK(cm_sidr_rep_unpack(mad, &srep) == -EINVAL,
	      "73 bytes of additional info taken");
}

/* RTU and DREP: two comm IDs, then private data to the end. */
static void
rtu_drep_bytes_match_table(void)
{
	struct cm_rtu rtu;
	struct cm_drep drep;
	uint8_t mad[CM_MAD_LEN];

	rtu_fill(&rtu);
	cm_rtu_pack(&rtu, TID, mad);
	check_hdr(mad, CM_ATTR_RTU);
	BYTES(mad, 0, "comm IDs", 0xe1, 0xe2, 0xe3, 0xe4,
	      0xf1, 0xf2, 0xf3, 0xf4);
	check_pattern(mad, 8, CM_RTU_PDATA, 0x55, "private data");
	drep_fill(&drep);
	cm_drep_pack(&drep, TID, mad);
	check_hdr(mad, CM_ATTR_DREP);
	BYTES(mad, 0, "comm IDs", 0xc1, 0xc2, 0xc3, 0xc4,
	      0xd1, 0xd2, 0xd3, 0xd4);
	check_pattern(mad, 8, CM_DREP_PDATA, 0x77, "private data");
}

/* cm_mad_hdr_unpack takes a 256-byte CM Send of class version 2 only. */
static void
hdr_unpack_refuses(void)
{
	struct cm_rtu rtu;
	struct cm_mad_hdr h;
	uint8_t mad[CM_MAD_LEN];

	rtu_fill(&rtu);
	cm_rtu_pack(&rtu, TID, mad);
	mad[20] = 0xde;		/* attribute modifier: read, not judged */
	CHECK(cm_mad_hdr_unpack(mad, sizeof(mad), &h) == 0, "a good RTU");
	CHECK(h.base_version == 1 && h.mgmt_class == 0x07 &&
	      h.class_version == 2 && h.method == 0x03 && h.status == 0 &&
	      h.class_specific == 0 && h.tid == TID &&
	      h.attr_id == CM_ATTR_RTU && h.attr_mod == 0xde000000,
	      "header fields");
	CHECK(cm_mad_tid(mad) == TID, "TID");
	CHECK(cm_mad_attr_id(mad) == CM_ATTR_RTU, "attribute ID");

	CHECK(cm_mad_hdr_unpack(mad, CM_MAD_LEN - 1, &h) == -EINVAL,
	      "255 bytes");
	CHECK(h.tid == TID, "a short MAD's header is still read");
	CHECK(cm_mad_hdr_unpack(mad, 10, &h) == -EINVAL, "10 bytes");
	mad[0] = 2;
	CHECK(cm_mad_hdr_unpack(mad, sizeof(mad), &h) == -EINVAL,
	      "base version 2");
	mad[0] = 1;
	mad[1] = 0x04;
	CHECK(cm_mad_hdr_unpack(mad, sizeof(mad), &h) == -EINVAL,
	      "class 0x04 (PerfMgt)");
	CHECK(h.mgmt_class == 0x04, "header filled as far as read");
	mad[1] = 0x07;
	mad[2] = 1;
	CHECK(cm_mad_hdr_unpack(mad, sizeof(mad), &h) == -EPROTONOSUPPORT,
	      "class version 1");
	mad[2] = 2;
	mad[3] = 0x01;
	CHECK(cm_mad_hdr_unpack(mad, sizeof(mad), &h) == -EBADMSG,
	      "method Get");
	mad[3] = 0x03;
	CHECK(cm_mad_hdr_unpack(mad, sizeof(mad), &h) == 0, "restored");
}

static void
attr_names(void)
{
	CHECK(strcmp(cm_attr_name(CM_ATTR_REQ), "REQ") == 0, "REQ");
	CHECK(strcmp(cm_attr_name(CM_ATTR_SIDR_REP), "SIDR_REP") == 0,
	      "SIDR_REP");
	CHECK(strcmp(cm_attr_name(0x0042), "?") == 0, "unknown");
}

/*
 * --tshark: the nine messages, each in a RoCEv2 UD SEND to QP 1 in a
 * pcap, read back by tshark's field extraction; the REQ a second time
 * over IPv6, where tshark shows its GIDs whole.
 */

#define ETH_LEN		14
#define IP4_LEN		20
#define IP6_LEN		40
#define UDP_LEN		8
#define BTH_LEN		12
#define DETH_LEN	8
#define ICRC_LEN	4
#define ROCE_LEN	(UDP_LEN + BTH_LEN + DETH_LEN + CM_MAD_LEN + ICRC_LEN)
#define FRAME_MAX	(ETH_LEN + IP6_LEN + ROCE_LEN)

static void
be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void
be32(uint8_t *p, uint32_t v)
{
	be16(p, v >> 16);
	be16(p + 2, v & 0xffff);
}

/* The Internet checksum of @n bytes, added to @sum. */
static uint32_t
csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t
csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * Ethernet / IPv4 or IPv6 / UDP 4791 / BTH (UD SEND only, QP 1) / DETH /
 * MAD / ICRC; returns the frame's length.
 */
static size_t
roce_frame(uint8_t *f, const uint8_t *mad, uint32_t psn, int v6)
{
	static const uint8_t mac[12] = { 0x02, 0, 0, 0, 0, 0x02,
					 0x02, 0, 0, 0, 0, 0x01 };
	uint8_t *ip = f + ETH_LEN;
	uint8_t *udp = ip + (v6 ? IP6_LEN : IP4_LEN);
	uint8_t *bth = udp + UDP_LEN;
	uint8_t *deth = bth + BTH_LEN;
	uint8_t pseudo[40] = { 0 };
	uint16_t c;

	memset(f, 0, FRAME_MAX);
	memcpy(f, mac, sizeof(mac));
	be16(f + 12, v6 ? 0x86dd : 0x0800);
	if (v6) {
		ip[0] = 0x60;
		be16(ip + 4, ROCE_LEN);
		ip[6] = 17;
		ip[7] = 64;
		be32(ip + 8, 0x20010db8);	/* 2001:db8::1 */
		ip[23] = 1;
		be32(ip + 24, 0x20010db8);	/* 2001:db8::2 */
		ip[39] = 2;
	} else {
		ip[0] = 0x45;
		be16(ip + 2, IP4_LEN + ROCE_LEN);
		be16(ip + 6, 0x4000);		/* DF */
		ip[8] = 64;
		ip[9] = 17;
		be32(ip + 12, 0xc0000201);	/* 192.0.2.1 */
		be32(ip + 16, 0xc0000202);
		be16(ip + 10, csum_fold(csum_add(0, ip, IP4_LEN)));
	}
	be16(udp, 0xc000);
	be16(udp + 2, 4791);
	be16(udp + 4, ROCE_LEN);
	bth[0] = 0x64;			/* UD SEND only */
	be16(bth + 2, 0xffff);
	be32(bth + 4, 1);		/* dest QP 1 */
	be32(bth + 8, psn);
	be32(deth, 0x80010000);		/* the GSI Q_Key */
	be32(deth + 4, 1);		/* source QP 1 */
	memcpy(deth + DETH_LEN, mad, CM_MAD_LEN);
	/* ICRC left zero: tshark does not check it unless asked to. */
	if (v6) {
		/* IPv6 forbids a zero UDP checksum (RFC 8200 8.1). */
		memcpy(pseudo, ip + 8, 32);
		be32(pseudo + 32, ROCE_LEN);
		pseudo[39] = 17;
		c = csum_fold(csum_add(csum_add(0, pseudo, 40), udp,
				       ROCE_LEN));
		be16(udp + 6, c == 0 ? 0xffff : c);
	}
	return (size_t)(udp - f) + ROCE_LEN;
}

/* Frames 1..n carry mads[0..n-1], over IPv6 where @v6[i]. */
static void
pcap_write(const char *path, uint8_t mads[][CM_MAD_LEN], const int *v6,
	   unsigned int n)
{
	const uint32_t ghdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };
	uint8_t frame[FRAME_MAX];
	uint32_t rec[4];
	unsigned int i;
	size_t len;
	FILE *f = fopen(path, "wb");

	CHECK(f != NULL, "%s: %s", path, strerror(errno));
	CHECK(fwrite(ghdr, sizeof(ghdr), 1, f) == 1, "pcap header");
	for (i = 0; i < n; i++) {
		len = roce_frame(frame, mads[i], i, v6[i]);
		rec[0] = i + 1;
		rec[1] = 0;
		rec[2] = (uint32_t)len;
		rec[3] = (uint32_t)len;
		CHECK(fwrite(rec, sizeof(rec), 1, f) == 1 &&
		      fwrite(frame, len, 1, f) == 1, "pcap record");
	}
	CHECK(fclose(f) == 0, "%s: %s", path, strerror(errno));
}

enum ts_kind { TS_NUM, TS_IPV4, TS_IPV6, TS_BYTES };

/* A field as tshark should print it; @num2 a second reading allowed. */
struct ts_field {
	const char *name;
	enum ts_kind kind;
	uint64_t num;
	uint64_t num2;
	const uint8_t *bytes;
	size_t len;
};

#define NUM(n, v)	{ n, TS_NUM, v, v, NULL, 0 }
#define NUM2(n, v, v2)	{ n, TS_NUM, v, v2, NULL, 0 }
#define IPV4(n, g)	{ n, TS_IPV4, 0, 0, (g) + 12, 4 }
#define IPV6(n, g)	{ n, TS_IPV6, 0, 0, g, 16 }
#define BLOB(n, b, l)	{ n, TS_BYTES, 0, 0, b, l }

/* "a1:b2..." or "a1b2..." as tshark prints FT_BYTES */
static size_t
parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned int v;

	while (*s != '\0' && n < max) {
		if (*s == ':') {
			s++;
			continue;
		}
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static void
ts_compare(const char *what, const struct ts_field *f, const char *val)
{
	uint8_t got[CM_MAD_LEN];
	unsigned long long v;
	char *end;

	CHECK(*val != '\0', "%s: tshark has no %s", what, f->name);
	switch (f->kind) {
	case TS_NUM:
		v = strtoull(val, &end, 0);
		CHECK(*end == '\0' && (v == f->num || v == f->num2),
		      "%s: tshark reads %s as %s, we packed 0x%llx", what,
		      f->name, val, (unsigned long long)f->num);
		break;
	case TS_IPV4:
		CHECK(inet_pton(AF_INET, val, got) == 1 &&
		      memcmp(got, f->bytes, 4) == 0,
		      "%s: tshark reads %s as %s", what, f->name, val);
		break;
	case TS_IPV6:
		CHECK(inet_pton(AF_INET6, val, got) == 1 &&
		      memcmp(got, f->bytes, 16) == 0,
		      "%s: tshark reads %s as %s", what, f->name, val);
		break;
	case TS_BYTES:
		CHECK(parse_hex(val, got, sizeof(got)) == f->len &&
		      memcmp(got, f->bytes, f->len) == 0,
		      "%s: tshark reads %s as %s", what, f->name, val);
		break;
	}
}

/*
 * Run tshark on @pcap for the one frame @filter selects and compare each
 * of @f with its field, after the BTH's QP and the MAD header (attribute
 * @attr, modifier @mod: a REQ's or REP's ECE options); tshark must find the frame neither malformed nor worth an
 * expert note.
 */
static void
ts_check(const char *pcap, const char *what, const char *filter,
	 uint16_t attr, uint32_t mod, const struct ts_field *f, unsigned int n)
{
	const struct ts_field hdr[] = {
		NUM("infiniband.bth.destqp", 1),
		NUM("infiniband.mad.baseversion", 1),
		NUM("infiniband.mad.mgmtclass", 0x07),
		NUM("infiniband.mad.classversion", 2),
		NUM("infiniband.mad.method", 0x03),
		NUM("infiniband.mad.status", 0),
		NUM("infiniband.mad.classspecific", 0),
		NUM("infiniband.mad.transactionid", TID),
		NUM("infiniband.mad.attributeid", attr),
		NUM("infiniband.mad.attributemodifier", mod),
	};
	const unsigned int nhdr = sizeof(hdr) / sizeof(hdr[0]);
	const unsigned int nf = 2 + nhdr + n;
	char cmd[8192], line[16384], extra[16384];
	char *tok, *tab;
	size_t len;
	unsigned int i;
	FILE *p;

	len = snprintf(cmd, sizeof(cmd), TSHARK " -n -r %s -Y '%s' "
		       "-T fields -E separator=/t -E occurrence=f "
		       "-e _ws.malformed -e _ws.expert.severity", pcap, filter);
	for (i = 0; i < nhdr + n && len < sizeof(cmd); i++)
		len += snprintf(cmd + len, sizeof(cmd) - len, " -e %s",
				i < nhdr ? hdr[i].name : f[i - nhdr].name);
	CHECK(len < sizeof(cmd), "command too long");
	p = popen(cmd, "r");
	CHECK(p != NULL, "popen: %s", strerror(errno));
	CHECK(fgets(line, sizeof(line), p) != NULL, "%s: no frame from %s",
	      what, cmd);
	CHECK(fgets(extra, sizeof(extra), p) == NULL, "%s: two frames", what);
	CHECK(pclose(p) == 0, "%s: tshark failed", what);
	line[strcspn(line, "\n")] = '\0';

	/* Split on every tab: strtok would merge the empty fields. */
	tok = line;
	for (i = 0; i < nf; i++) {
		tab = strchr(tok, '\t');
		CHECK((tab != NULL) == (i + 1 < nf), "%s: not %u fields",
		      what, nf);
		if (tab != NULL)
			*tab = '\0';
		if (i == 0)
			CHECK(*tok == '\0', "%s: tshark finds it malformed",
			      what);
		else if (i == 1)
			CHECK(*tok == '\0', "%s: tshark expert info, severity %s",
			      what, tok);
		else
			ts_compare(what, i - 2 < nhdr ? &hdr[i - 2] :
				   &f[i - 2 - nhdr], tok);
		tok = tab + 1;
	}
	check_passed++;
	printf("ok %d - tshark reads the %s as packed (%u fields)\n",
	       check_passed, what, nhdr + n);
}

/*
 * tshark's dissector (4.0, and upstream's when this was written) adds the
 * REQ's flow label word as a 3-byte item and its packet rate as a 1-byte
 * item, each with a mask meant for the whole 32-bit word: it shows the
 * top 12 bits of the flow label and the low 6 bits of the word's first
 * byte. The rate is only checked by hand (req_bytes_match_table); either
 * tshark's reading or the spec's passes here.
 */
#define TS_FLOW(fl)	((fl) >> 8)
#define TS_RATE(fl)	(((fl) >> 12) & 0x3f)

static void
ts_req(const char *pcap, const struct cm_req *m, int v6)
{
	const struct cm_req_path *pp = &m->primary, *ap = &m->alternate;
	const struct ts_field f[] = {
		NUM("infiniband.cm.req", m->local_comm_id),
		NUM("infiniband.cm.req.serviceid", m->service_id),
		NUM("infiniband.cm.req.localcaguid", m->local_ca_guid),
		NUM("infiniband.cm.req.localqkey", m->local_qkey),
		NUM("infiniband.cm.req.localqpn", m->local_qpn),
		NUM("infiniband.cm.req.responderres", m->responder_resources),
		NUM("infiniband.cm.req.localeecn", m->local_eecn),
		NUM("infiniband.cm.req.initdepth", m->initiator_depth),
		NUM("infiniband.cm.req.remoteeecn", m->remote_eecn),
		NUM("infiniband.cm.req.remoteresptout",
		    m->remote_cm_response_timeout),
		NUM("infiniband.cm.req.transpsvctype",
		    m->transport_service_type),
		NUM("infiniband.cm.req.e2eflowctrl",
		    m->end_to_end_flow_control),
		NUM("infiniband.cm.req.startpsn", m->starting_psn),
		NUM("infiniband.cm.req.localresptout",
		    m->local_cm_response_timeout),
		NUM("infiniband.cm.req.retrcount", m->retry_count),
		NUM("infiniband.cm.req.pkey", m->partition_key),
		NUM("infiniband.cm.req.pppmtu", m->path_mtu),
		NUM("infiniband.cm.req.rdcexist", m->rdc_exists),
		NUM("infiniband.cm.req.rnrretrcount", m->rnr_retry_count),
		NUM("infiniband.cm.req.maxcmretr", m->max_cm_retries),
		NUM("infiniband.cm.req.srq", m->srq),
		NUM("infiniband.cm.req.ext_transport",
		    m->extended_transport_type),
		NUM("infiniband.cm.req.prim_locallid", pp->local_lid),
		NUM("infiniband.cm.req.prim_remotelid", pp->remote_lid),
		/* Over IPv4 tshark takes a GID for an IPv4-mapped address. */
		v6 ? (struct ts_field)IPV6("infiniband.cm.req.prim_localgid",
					   pp->local_gid) :
		     (struct ts_field)IPV4("infiniband.cm.req.prim_localgid_ipv4",
					   pp->local_gid),
		v6 ? (struct ts_field)IPV6("infiniband.cm.req.prim_remotegid",
					   pp->remote_gid) :
		     (struct ts_field)IPV4("infiniband.cm.req.prim_remotegid_ipv4",
					   pp->remote_gid),
		NUM2("infiniband.cm.req.prim_flowlabel", pp->flow_label,
		     TS_FLOW(pp->flow_label)),
		NUM2("infiniband.cm.req.prim_pktrate", pp->packet_rate,
		     TS_RATE(pp->flow_label)),
		NUM("infiniband.cm.req.prim_tfcclass", pp->traffic_class),
		NUM("infiniband.cm.req.prim_hoplim", pp->hop_limit),
		NUM("infiniband.cm.req.prim_sl", pp->sl),
		NUM("infiniband.cm.req.prim_subnetlocal", pp->subnet_local),
		NUM("infiniband.cm.req.prim_reserved1", 0),
		NUM("infiniband.cm.req.prim_localacktout",
		    pp->local_ack_timeout),
		NUM("infiniband.cm.req.prim_reserved2", 0),
		NUM("infiniband.cm.req.alt_locallid", ap->local_lid),
		NUM("infiniband.cm.req.alt_remotelid", ap->remote_lid),
		BLOB("infiniband.cm.req.alt_localgid", ap->local_gid, 16),
		BLOB("infiniband.cm.req.alt_remotegid", ap->remote_gid, 16),
		NUM2("infiniband.cm.req.alt_flowlabel", ap->flow_label,
		     TS_FLOW(ap->flow_label)),
		NUM2("infiniband.cm.req.alt_pktrate", ap->packet_rate,
		     TS_RATE(ap->flow_label)),
		NUM("infiniband.cm.req.alt_tfcclass", ap->traffic_class),
		NUM("infiniband.cm.req.alt_hoplim", ap->hop_limit),
		NUM("infiniband.cm.req.alt_sl", ap->sl),
		NUM("infiniband.cm.req.alt_subnetlocal", ap->subnet_local),
		NUM("infiniband.cm.req.alt_reserved1", 0),
		NUM("infiniband.cm.req.alt_localacktout",
		    ap->local_ack_timeout),
		BLOB("infiniband.cm.req.private", m->private_data,
		     CM_REQ_PDATA),
	};

	ts_check(pcap, v6 ? "REQ over IPv6" : "REQ",
		 v6 ? "infiniband.mad.attributeid == 0x0010 && ipv6" :
		      "infiniband.mad.attributeid == 0x0010 && ip",
		 CM_ATTR_REQ, m->ece_options, f, sizeof(f) / sizeof(f[0]));
}

static void
ts_rep(const char *pcap, const struct cm_rep *m)
{
	const struct ts_field f[] = {
		NUM("infiniband.cm.rep", m->local_comm_id),
		NUM("infiniband.cm.rep.remotecommid", m->remote_comm_id),
		NUM("infiniband.cm.rep.localqkey", m->local_qkey),
		NUM("infiniband.cm.rep.localqpn", m->local_qpn),
		NUM("infiniband.cm.rep.localeecn", m->local_eecn),
		NUM("infiniband.cm.rep.startpsn", m->starting_psn),
		NUM("infiniband.cm.rep.respres", m->responder_resources),
		NUM("infiniband.cm.rep.initdepth", m->initiator_depth),
		NUM("infiniband.cm.rep.tgtackdelay", m->target_ack_delay),
		NUM("infiniband.cm.rep.failoveracc", m->failover_accepted),
		NUM("infiniband.cm.rep.e2eflowctrl",
		    m->end_to_end_flow_control),
		NUM("infiniband.cm.rep.rnrretrcount", m->rnr_retry_count),
		NUM("infiniband.cm.rep.srq", m->srq),
		NUM("infiniband.cm.rep.reserved", 0),
		NUM("infiniband.cm.rep.localcaguid", m->local_ca_guid),
		BLOB("infiniband.cm.rep.private", m->private_data,
		     CM_REP_PDATA),
	};

	ts_check(pcap, "REP", "infiniband.mad.attributeid == 0x0013",
		 CM_ATTR_REP, m->ece_options, f, sizeof(f) / sizeof(f[0]));
}

static void
ts_rej(const char *pcap, const struct cm_rej *m)
{
	const struct ts_field f[] = {
		NUM("infiniband.cm.rej.localcommid", m->local_comm_id),
		NUM("infiniband.cm.rej.remotecommid", m->remote_comm_id),
		NUM("infiniband.cm.rej.msgrej", m->message_rejected),
		NUM("infiniband.cm.rej.reserved0", 0),
		NUM("infiniband.cm.rej.rejinfolen", m->ari_length),
		NUM("infiniband.cm.rej.reserved1", 0),
		NUM("infiniband.cm.rej.reason", m->reason),
		BLOB("infiniband.cm.rej.ari", m->ari, CM_REJ_ARI),
		BLOB("infiniband.cm.rej.private", m->private_data,
		     CM_REJ_PDATA),
	};

	ts_check(pcap, "REJ", "infiniband.mad.attributeid == 0x0012",
		 CM_ATTR_REJ, 0, f, sizeof(f) / sizeof(f[0]));
}

static void
ts_rtu_dreq_drep(const char *pcap, const struct cm_rtu *rtu,
		 const struct cm_dreq *dreq, const struct cm_drep *drep)
{
	const struct ts_field frtu[] = {
		NUM("infiniband.cm.rtu.localcommid", rtu->local_comm_id),
		NUM("infiniband.cm.rtu.remotecommid", rtu->remote_comm_id),
		BLOB("infiniband.cm.rtu.private", rtu->private_data,
		     CM_RTU_PDATA),
	};
	/* tshark files the DREQ's remote QPN under "cm.req". */
	const struct ts_field fdreq[] = {
		NUM("infiniband.cm.dreq.localcommid", dreq->local_comm_id),
		NUM("infiniband.cm.dreq.remotecommid", dreq->remote_comm_id),
		NUM("infiniband.cm.req.remoteqpneecn", dreq->remote_qpn),
		BLOB("infiniband.cm.dreq.private", dreq->private_data,
		     CM_DREQ_PDATA),
	};
	const struct ts_field fdrep[] = {
		NUM("infiniband.cm.drsp.localcommid", drep->local_comm_id),
		NUM("infiniband.cm.drsp.remotecommid", drep->remote_comm_id),
		BLOB("infiniband.cm.drsp.private", drep->private_data,
		     CM_DREP_PDATA),
	};

	ts_check(pcap, "RTU", "infiniband.mad.attributeid == 0x0014",
		 CM_ATTR_RTU, 0, frtu, 3);
	ts_check(pcap, "DREQ", "infiniband.mad.attributeid == 0x0015",
		 CM_ATTR_DREQ, 0, fdreq, 4);
	ts_check(pcap, "DREP", "infiniband.mad.attributeid == 0x0016",
		 CM_ATTR_DREP, 0, fdrep, 3);
}

/*
 * tshark has no dissector for the MRA and the SIDR messages ("Dissector
 * Not Implemented"): it can only vouch for their MAD header and that the
 * data area it sees is the one the unit tests checked byte by byte.
 */
static void
ts_undissected(const char *pcap, const char *what, uint16_t attr,
	       const uint8_t *mad)
{
	const struct ts_field f[] = {
		BLOB("infiniband.mad.data", mad + CM_MAD_HDR_LEN,
		     CM_MAD_LEN - CM_MAD_HDR_LEN),
	};
	char filter[64];

	snprintf(filter, sizeof(filter), "infiniband.mad.attributeid == 0x%04x",
		 attr);
	ts_check(pcap, what, filter, attr, 0, f, 1);
}

static int
tshark_main(const char *dir)
{
	enum { REQ, MRA, REJ, REP, RTU, DREQ, DREP, SREQ, SREP, REQ6, NMSG };
	const int v6[NMSG] = { [REQ6] = 1 };
	struct cm_req req;
	struct cm_mra mra;
	struct cm_rej rej;
	struct cm_rep rep;
	struct cm_rtu rtu;
	struct cm_dreq dreq;
	struct cm_drep drep;
	struct cm_sidr_req sreq;
	struct cm_sidr_rep srep;
	uint8_t mads[NMSG][CM_MAD_LEN];
	char pcap[4096];

	if (access(TSHARK, X_OK) != 0)
		CHECK_SKIP("tshark: %s not found", TSHARK);
	check_current = "tshark";
	req_fill(&req);
	mra_fill(&mra);
	rej_fill(&rej);
	rep_fill(&rep);
	rtu_fill(&rtu);
	dreq_fill(&dreq);
	drep_fill(&drep);
	sidr_req_fill(&sreq);
	sidr_rep_fill(&srep);
	cm_req_pack(&req, TID, mads[REQ]);
	cm_mra_pack(&mra, TID, mads[MRA]);
	cm_rej_pack(&rej, TID, mads[REJ]);
	cm_rep_pack(&rep, TID, mads[REP]);
	cm_rtu_pack(&rtu, TID, mads[RTU]);
	cm_dreq_pack(&dreq, TID, mads[DREQ]);
	cm_drep_pack(&drep, TID, mads[DREP]);
	cm_sidr_req_pack(&sreq, TID, mads[SREQ]);
	cm_sidr_rep_pack(&srep, TID, mads[SREP]);
	cm_req_pack(&req, TID, mads[REQ6]);
	CHECK(snprintf(pcap, sizeof(pcap), "%s/cm_msg.pcap", dir) <
	      (int)sizeof(pcap), "path too long");
	pcap_write(pcap, mads, v6, NMSG);

	ts_req(pcap, &req, 0);
	ts_req(pcap, &req, 1);
	ts_rep(pcap, &rep);
	ts_rej(pcap, &rej);
	ts_rtu_dreq_drep(pcap, &rtu, &dreq, &drep);
	ts_undissected(pcap, "MRA", CM_ATTR_MRA, mads[MRA]);
	ts_undissected(pcap, "SIDR_REQ", CM_ATTR_SIDR_REQ, mads[SREQ]);
	ts_undissected(pcap, "SIDR_REP", CM_ATTR_SIDR_REP, mads[SREP]);
	CHECK_DONE();
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--tshark") == 0)
		return tshark_main(argv[2]);
	RUN(roundtrip_every_message);
	RUN(req_bytes_match_table);
	RUN(rep_bytes_match_table);
	RUN(rej_mra_bytes_match_table);
	RUN(dreq_sidr_bytes_match_table);
	RUN(rtu_drep_bytes_match_table);
	RUN(hdr_unpack_refuses);
	RUN(attr_names);
	CHECK_DONE();
}
