/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The CM messages on the wire (IBA 12.6, 12.11; MAD header 13.4.2).
 *
 * The spec's message tables number bytes from the start of the MAD data
 * area and bits within a 32-bit big-endian word, most significant bit
 * first: "byte 40, bits 24-28" is the five bits below the top three of
 * byte 43. field_put()/field_get() take exactly that (word, bit, width)
 * triple so each line below can be read against its table row; whole
 * bytes, GIDs and private data are copied as they are.
 *
 * Values wider than their field are cut to its width on packing rather
 * than spilling into the neighbouring field.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cm_msg.h"

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static uint32_t
field_mask(unsigned int width)
{
	return width >= 32 ? UINT32_MAX : (UINT32_C(1) << width) - 1;
}

/*
 * Write @v into bits @bit .. @bit + @width - 1 (0 = most significant) of
 * the big-endian word at byte @word of @d, leaving the word's other bits
 * as they are: several fields share a word.
 */
static void
field_put(uint8_t *d, unsigned int word, unsigned int bit,
	  unsigned int width, uint32_t v)
{
	unsigned int shift = 32 - bit - width;
	uint32_t mask = field_mask(width) << shift;
	uint32_t w = get32(d + word);

	w = (w & ~mask) | ((v << shift) & mask);
	put32(d + word, w);
}

static uint32_t
field_get(const uint8_t *d, unsigned int word, unsigned int bit,
	  unsigned int width)
{
	return (get32(d + word) >> (32 - bit - width)) & field_mask(width);
}

/* The common MAD header of every CM message we send (IBA 13.4.2). */
static uint8_t *
hdr_pack(uint8_t *buf, uint16_t attr_id, uint64_t tid)
{
	memset(buf, 0, CM_MAD_LEN);
	buf[0] = CM_BASE_VERSION;
	buf[1] = CM_MGMT_CLASS;
	buf[2] = CM_CLASS_VERSION;
	buf[3] = CM_METHOD_SEND;
	/* status, class specific: 0 */
	put64(buf + 8, tid);
	put16(buf + 16, attr_id);
	/* reserved, attribute modifier: 0 */
	return buf + CM_MAD_HDR_LEN;
}

int
cm_mad_hdr_unpack(const uint8_t *buf, size_t len, struct cm_mad_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (len < CM_MAD_HDR_LEN)
		return -EINVAL;
	h->base_version = buf[0];
	h->mgmt_class = buf[1];
	h->class_version = buf[2];
	h->method = buf[3];
	h->status = get16(buf + 4);
	h->class_specific = get16(buf + 6);
	h->tid = get64(buf + 8);
	h->attr_id = get16(buf + 16);
	h->attr_mod = get32(buf + 20);
	/* A MAD on QP 1 is always 256 bytes, padding included. */
	if (len < CM_MAD_LEN || h->base_version != CM_BASE_VERSION ||
	    h->mgmt_class != CM_MGMT_CLASS)
		return -EINVAL;
	/*
	 * Told apart from the errors above: a newer class version is a CM
	 * MAD the caller may answer (REJ reason 31), not garbage to drop.
	 */
	if (h->class_version != CM_CLASS_VERSION)
		return -EPROTONOSUPPORT;
	if (h->method != CM_METHOD_SEND)
		return -EBADMSG;
	return 0;
}

uint16_t
cm_mad_attr_id(const uint8_t *buf)
{
	return get16(buf + 16);
}

uint64_t
cm_mad_tid(const uint8_t *buf)
{
	return get64(buf + 8);
}

const char *
cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
	case CM_ATTR_CLASS_PORT_INFO:
		return "ClassPortInfo";
	case CM_ATTR_REQ:
		return "REQ";
	case CM_ATTR_MRA:
		return "MRA";
	case CM_ATTR_REJ:
		return "REJ";
	case CM_ATTR_REP:
		return "REP";
	case CM_ATTR_RTU:
		return "RTU";
	case CM_ATTR_DREQ:
		return "DREQ";
	case CM_ATTR_DREP:
		return "DREP";
	case CM_ATTR_SIDR_REQ:
		return "SIDR_REQ";
	case CM_ATTR_SIDR_REP:
		return "SIDR_REP";
	case CM_ATTR_LAP:
		return "LAP";
	case CM_ATTR_APR:
		return "APR";
	}
	return "?";
}

/*
 * A REQ path: 44 bytes, the primary at data byte 52 and the alternate at
 * 96 (Table 99), offsets below relative to the path's first byte.
 */
static void
path_pack(uint8_t *d, const struct cm_req_path *p)
{
	field_put(d, 0, 0, 16, p->local_lid);
	field_put(d, 0, 16, 16, p->remote_lid);
	memcpy(d + 4, p->local_gid, 16);
	memcpy(d + 20, p->remote_gid, 16);
	field_put(d, 36, 0, 20, p->flow_label);
	field_put(d, 36, 26, 6, p->packet_rate);
	field_put(d, 40, 0, 8, p->traffic_class);
	field_put(d, 40, 8, 8, p->hop_limit);
	field_put(d, 40, 16, 4, p->sl);
	field_put(d, 40, 20, 1, p->subnet_local);
	field_put(d, 40, 24, 5, p->local_ack_timeout);
}

static void
path_unpack(const uint8_t *d, struct cm_req_path *p)
{
	p->local_lid = field_get(d, 0, 0, 16);
	p->remote_lid = field_get(d, 0, 16, 16);
	memcpy(p->local_gid, d + 4, 16);
	memcpy(p->remote_gid, d + 20, 16);
	p->flow_label = field_get(d, 36, 0, 20);
	p->packet_rate = field_get(d, 36, 26, 6);
	p->traffic_class = field_get(d, 40, 0, 8);
	p->hop_limit = field_get(d, 40, 8, 8);
	p->sl = field_get(d, 40, 16, 4);
	p->subnet_local = field_get(d, 40, 20, 1);
	p->local_ack_timeout = field_get(d, 40, 24, 5);
}

/* REQ: IBA 12.6.5, Table 99. */
void
cm_req_pack(const struct cm_req *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_REQ, tid);

	put32(d + 0, m->local_comm_id);
	put64(d + 8, m->service_id);
	put64(d + 16, m->local_ca_guid);
	put32(d + 28, m->local_qkey);
	field_put(d, 32, 0, 24, m->local_qpn);
	field_put(d, 32, 24, 8, m->responder_resources);
	field_put(d, 36, 0, 24, m->local_eecn);
	field_put(d, 36, 24, 8, m->initiator_depth);
	field_put(d, 40, 0, 24, m->remote_eecn);
	field_put(d, 40, 24, 5, m->remote_cm_response_timeout);
	field_put(d, 40, 29, 2, m->transport_service_type);
	field_put(d, 40, 31, 1, m->end_to_end_flow_control);
	field_put(d, 44, 0, 24, m->starting_psn);
	field_put(d, 44, 24, 5, m->local_cm_response_timeout);
	field_put(d, 44, 29, 3, m->retry_count);
	field_put(d, 48, 0, 16, m->partition_key);
	field_put(d, 48, 16, 4, m->path_mtu);
	field_put(d, 48, 20, 1, m->rdc_exists);
	field_put(d, 48, 21, 3, m->rnr_retry_count);
	field_put(d, 48, 24, 4, m->max_cm_retries);
	field_put(d, 48, 28, 1, m->srq);
	field_put(d, 48, 29, 3, m->extended_transport_type);
	path_pack(d + 52, &m->primary);
	path_pack(d + 96, &m->alternate);
	memcpy(d + 140, m->private_data, CM_REQ_PDATA);
	field_put(d, 4, 8, 24, m->ece_vendor_id);
	put32(buf + 20, m->ece_options);	/* the attribute modifier */
}

int
cm_req_unpack(const uint8_t *buf, struct cm_req *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->service_id = get64(d + 8);
	m->local_ca_guid = get64(d + 16);
	m->local_qkey = get32(d + 28);
	m->local_qpn = field_get(d, 32, 0, 24);
	m->responder_resources = field_get(d, 32, 24, 8);
	m->local_eecn = field_get(d, 36, 0, 24);
	m->initiator_depth = field_get(d, 36, 24, 8);
	m->remote_eecn = field_get(d, 40, 0, 24);
	m->remote_cm_response_timeout = field_get(d, 40, 24, 5);
	m->transport_service_type = field_get(d, 40, 29, 2);
	m->end_to_end_flow_control = field_get(d, 40, 31, 1);
	m->starting_psn = field_get(d, 44, 0, 24);
	m->local_cm_response_timeout = field_get(d, 44, 24, 5);
	m->retry_count = field_get(d, 44, 29, 3);
	m->partition_key = field_get(d, 48, 0, 16);
	m->path_mtu = field_get(d, 48, 16, 4);
	m->rdc_exists = field_get(d, 48, 20, 1);
	m->rnr_retry_count = field_get(d, 48, 21, 3);
	m->max_cm_retries = field_get(d, 48, 24, 4);
	m->srq = field_get(d, 48, 28, 1);
	m->extended_transport_type = field_get(d, 48, 29, 3);
	path_unpack(d + 52, &m->primary);
	path_unpack(d + 96, &m->alternate);
	memcpy(m->private_data, d + 140, CM_REQ_PDATA);
	m->ece_vendor_id = field_get(d, 4, 8, 24);
	m->ece_options = get32(buf + 20);
	return 0;
}

/* MRA: IBA 12.6.6, Table 100. */
void
cm_mra_pack(const struct cm_mra *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_MRA, tid);

	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	field_put(d, 8, 0, 2, m->message_mraed);
	field_put(d, 8, 8, 5, m->service_timeout);
	memcpy(d + 10, m->private_data, CM_MRA_PDATA);
}

int
cm_mra_unpack(const uint8_t *buf, struct cm_mra *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	m->message_mraed = field_get(d, 8, 0, 2);
	m->service_timeout = field_get(d, 8, 8, 5);
	memcpy(m->private_data, d + 10, CM_MRA_PDATA);
	return 0;
}

/* REJ: IBA 12.6.7, Table 101. */
void
cm_rej_pack(const struct cm_rej *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_REJ, tid);

	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	field_put(d, 8, 0, 2, m->message_rejected);
	field_put(d, 8, 8, 7, m->ari_length);
	field_put(d, 8, 16, 16, m->reason);
	memcpy(d + 12, m->ari, CM_REJ_ARI);
	memcpy(d + 84, m->private_data, CM_REJ_PDATA);
}

int
cm_rej_unpack(const uint8_t *buf, struct cm_rej *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	m->message_rejected = field_get(d, 8, 0, 2);
	m->ari_length = field_get(d, 8, 8, 7);
	m->reason = field_get(d, 8, 16, 16);
	memcpy(m->ari, d + 12, CM_REJ_ARI);
	memcpy(m->private_data, d + 84, CM_REJ_PDATA);
	/* Seven bits can claim up to 127 bytes of a 72-byte field. */
	return m->ari_length > CM_REJ_ARI ? -EINVAL : 0;
}

/* REP: IBA 12.6.8, Table 104. */
void
cm_rep_pack(const struct cm_rep *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_REP, tid);

	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	put32(d + 8, m->local_qkey);
	field_put(d, 12, 0, 24, m->local_qpn);
	field_put(d, 16, 0, 24, m->local_eecn);
	field_put(d, 20, 0, 24, m->starting_psn);
	field_put(d, 24, 0, 8, m->responder_resources);
	field_put(d, 24, 8, 8, m->initiator_depth);
	field_put(d, 24, 16, 5, m->target_ack_delay);
	field_put(d, 24, 21, 2, m->failover_accepted);
	field_put(d, 24, 23, 1, m->end_to_end_flow_control);
	field_put(d, 24, 24, 3, m->rnr_retry_count);
	field_put(d, 24, 27, 1, m->srq);
	put64(d + 28, m->local_ca_guid);
	memcpy(d + 36, m->private_data, CM_REP_PDATA);
	field_put(d, 12, 24, 8, m->ece_vendor_id >> 16);
	field_put(d, 16, 24, 8, m->ece_vendor_id >> 8);
	field_put(d, 20, 24, 8, m->ece_vendor_id);
	put32(buf + 20, m->ece_options);
}

int
cm_rep_unpack(const uint8_t *buf, struct cm_rep *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	m->local_qkey = get32(d + 8);
	m->local_qpn = field_get(d, 12, 0, 24);
	m->local_eecn = field_get(d, 16, 0, 24);
	m->starting_psn = field_get(d, 20, 0, 24);
	m->responder_resources = field_get(d, 24, 0, 8);
	m->initiator_depth = field_get(d, 24, 8, 8);
	m->target_ack_delay = field_get(d, 24, 16, 5);
	m->failover_accepted = field_get(d, 24, 21, 2);
	m->end_to_end_flow_control = field_get(d, 24, 23, 1);
	m->rnr_retry_count = field_get(d, 24, 24, 3);
	m->srq = field_get(d, 24, 27, 1);
	m->local_ca_guid = get64(d + 28);
	memcpy(m->private_data, d + 36, CM_REP_PDATA);
	m->ece_vendor_id = field_get(d, 12, 24, 8) << 16 |
			   field_get(d, 16, 24, 8) << 8 | field_get(d, 20, 24, 8);
	m->ece_options = get32(buf + 20);
	return 0;
}

/* RTU: IBA 12.6.9. */
void
cm_rtu_pack(const struct cm_rtu *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_RTU, tid);

	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	memcpy(d + 8, m->private_data, CM_RTU_PDATA);
}

int
cm_rtu_unpack(const uint8_t *buf, struct cm_rtu *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	memcpy(m->private_data, d + 8, CM_RTU_PDATA);
	return 0;
}

/* DREQ: IBA 12.6.10. */
void
cm_dreq_pack(const struct cm_dreq *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_DREQ, tid);

	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	field_put(d, 8, 0, 24, m->remote_qpn);
	memcpy(d + 12, m->private_data, CM_DREQ_PDATA);
}

int
cm_dreq_unpack(const uint8_t *buf, struct cm_dreq *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	m->remote_qpn = field_get(d, 8, 0, 24);
	memcpy(m->private_data, d + 12, CM_DREQ_PDATA);
	return 0;
}

/* DREP: IBA 12.6.11. */
void
cm_drep_pack(const struct cm_drep *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_DREP, tid);

	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	memcpy(d + 8, m->private_data, CM_DREP_PDATA);
}

int
cm_drep_unpack(const uint8_t *buf, struct cm_drep *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	memcpy(m->private_data, d + 8, CM_DREP_PDATA);
	return 0;
}

/* SIDR_REQ: IBA 12.11.1. */
void
cm_sidr_req_pack(const struct cm_sidr_req *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_SIDR_REQ, tid);

	put32(d + 0, m->request_id);
	field_put(d, 4, 0, 16, m->partition_key);
	put64(d + 8, m->service_id);
	memcpy(d + 16, m->private_data, CM_SIDR_REQ_PDATA);
}

int
cm_sidr_req_unpack(const uint8_t *buf, struct cm_sidr_req *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->request_id = get32(d + 0);
	m->partition_key = field_get(d, 4, 0, 16);
	m->service_id = get64(d + 8);
	memcpy(m->private_data, d + 16, CM_SIDR_REQ_PDATA);
	return 0;
}

/* SIDR_REP: IBA 12.11.2. */
void
cm_sidr_rep_pack(const struct cm_sidr_rep *m, uint64_t tid, uint8_t *buf)
{
	uint8_t *d = hdr_pack(buf, CM_ATTR_SIDR_REP, tid);

	put32(d + 0, m->request_id);
	field_put(d, 4, 0, 8, m->status);
	field_put(d, 4, 8, 8, m->add_info_length);
	field_put(d, 8, 0, 24, m->qpn);
	put64(d + 12, m->service_id);
	put32(d + 20, m->qkey);
	memcpy(d + 24, m->add_info, CM_SIDR_REP_INFO);
	memcpy(d + 96, m->private_data, CM_SIDR_REP_PDATA);
}

int
cm_sidr_rep_unpack(const uint8_t *buf, struct cm_sidr_rep *m)
{
	const uint8_t *d = buf + CM_MAD_HDR_LEN;

	memset(m, 0, sizeof(*m));
	m->request_id = get32(d + 0);
	m->status = field_get(d, 4, 0, 8);
	m->add_info_length = field_get(d, 4, 8, 8);
	m->qpn = field_get(d, 8, 0, 24);
	m->service_id = get64(d + 12);
	m->qkey = get32(d + 20);
	memcpy(m->add_info, d + 24, CM_SIDR_REP_INFO);
	memcpy(m->private_data, d + 96, CM_SIDR_REP_PDATA);
	return m->add_info_length > CM_SIDR_REP_INFO ? -EINVAL : 0;
}
