/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef CM_MSG_H
#define CM_MSG_H

/*
 * The communication manager's messages (IBA 12.6) as they travel in a MAD
 * on QP 1 (IBA 13.4): a 24-byte common MAD header, then the CM message in
 * the 232-byte MAD data area. Every struct here is the decoded message in
 * host byte order, one member per field of the spec's table, named after
 * the field; cm_*_pack writes the whole 256-byte MAD (header included) and
 * cm_*_unpack reads the message back from one. The wire layout (offsets,
 * bit positions, byte order) lives only in cm_msg.c.
 *
 * Reserved fields are written as zero and ignored on receipt (IBA 12.6,
 * C12-1 style). GIDs are kept as the 16 raw bytes of the wire.
 */
#include <stddef.h>
#include <stdint.h>

#define CM_MAD_LEN		256	/* a MAD on QP 1: header + data */
#define CM_MAD_HDR_LEN		24
#define CM_BASE_VERSION		1
#define CM_MGMT_CLASS		0x07	/* Communication Management */
#define CM_CLASS_VERSION	2
#define CM_METHOD_SEND		0x03	/* every CM message is a Send */

/* Attribute IDs (IBA Table 97) */
enum cm_attr {
	CM_ATTR_CLASS_PORT_INFO	= 0x0001,
	CM_ATTR_REQ		= 0x0010,
	CM_ATTR_MRA		= 0x0011,
	CM_ATTR_REJ		= 0x0012,
	CM_ATTR_REP		= 0x0013,
	CM_ATTR_RTU		= 0x0014,
	CM_ATTR_DREQ		= 0x0015,
	CM_ATTR_DREP		= 0x0016,
	CM_ATTR_SIDR_REQ	= 0x0017,
	CM_ATTR_SIDR_REP	= 0x0018,
	CM_ATTR_LAP		= 0x0019,
	CM_ATTR_APR		= 0x001a,
};

/* Private data sizes (IBA 12.6.5 - 12.6.11) */
#define CM_REQ_PDATA		92
#define CM_MRA_PDATA		222
#define CM_REJ_PDATA		148
#define CM_REJ_ARI		72
#define CM_REP_PDATA		196
#define CM_RTU_PDATA		224
#define CM_DREQ_PDATA		220
#define CM_DREP_PDATA		224
#define CM_SIDR_REQ_PDATA	216
#define CM_SIDR_REP_PDATA	136
#define CM_SIDR_REP_INFO	72

/* The common MAD header (IBA 13.4.2), host order. */
struct cm_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

/* One path of a REQ (IBA Table 99, primary and alternate alike). */
struct cm_req_path {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;		/* 20 bits */
	uint8_t packet_rate;		/* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;			/* 4 bits */
	uint8_t subnet_local;		/* 1 bit */
	uint8_t local_ack_timeout;	/* 5 bits */
};

/* Transport service types in a REQ (2 bits) */
enum cm_tst { CM_TST_RC = 0, CM_TST_UC = 1, CM_TST_RD = 2 };

/* ConnectRequest (IBA 12.6.5, Table 99) */
struct cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;		/* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;		/* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;		/* 24 bits */
	uint8_t remote_cm_response_timeout;	/* 5 bits */
	uint8_t transport_service_type;		/* 2 bits, enum cm_tst */
	uint8_t end_to_end_flow_control;	/* 1 bit */
	uint32_t starting_psn;		/* 24 bits */
	uint8_t local_cm_response_timeout;	/* 5 bits */
	uint8_t retry_count;		/* 3 bits */
	uint16_t partition_key;
	uint8_t path_mtu;		/* 4 bits, enum ibv_mtu coding */
	uint8_t rdc_exists;		/* 1 bit */
	uint8_t rnr_retry_count;	/* 3 bits */
	uint8_t max_cm_retries;		/* 4 bits */
	uint8_t srq;			/* 1 bit */
	uint8_t extended_transport_type;	/* 3 bits */
	struct cm_req_path primary;
	struct cm_req_path alternate;
	uint8_t private_data[CM_REQ_PDATA];
	/* Enhanced connection establishment (ECE) as the Linux CM carries
	 * it: the vendor ID in the reserved 24 bits after the local comm ID,
	 * the options in the MAD header's attribute modifier.
	 */
	uint32_t ece_vendor_id;		/* 24 bits */
	uint32_t ece_options;
};

/* MessageReceiptAcknowledgement (IBA 12.6.6, Table 100) */
enum cm_mra_msg { CM_MRA_REQ = 0, CM_MRA_REP = 1, CM_MRA_LAP = 2 };
struct cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;		/* 2 bits, enum cm_mra_msg */
	uint8_t service_timeout;	/* 5 bits */
	uint8_t private_data[CM_MRA_PDATA];
};

/* Reject (IBA 12.6.7, Table 101; reasons Table 103) */
enum cm_rej_msg { CM_REJ_REQ = 0, CM_REJ_REP = 1, CM_REJ_OTHER = 2 };
enum cm_rej_reason {
	CM_REJ_NO_QP			= 1,
	CM_REJ_NO_EEC			= 2,
	CM_REJ_NO_RESOURCES		= 3,
	CM_REJ_TIMEOUT			= 4,
	CM_REJ_UNSUPPORTED		= 5,
	CM_REJ_INVALID_COMM_ID		= 6,
	CM_REJ_INVALID_COMM_INSTANCE	= 7,
	CM_REJ_INVALID_SERVICE_ID	= 8,
	CM_REJ_INVALID_TRANSPORT_TYPE	= 9,
	CM_REJ_STALE_CONN		= 10,
	CM_REJ_RDC_NOT_EXIST		= 11,
	CM_REJ_INVALID_GID		= 12,
	CM_REJ_INVALID_LID		= 13,
	CM_REJ_INVALID_SL		= 14,
	CM_REJ_INVALID_TRAFFIC_CLASS	= 15,
	CM_REJ_INVALID_HOP_LIMIT	= 16,
	CM_REJ_INVALID_PACKET_RATE	= 17,
	CM_REJ_INVALID_ALT_GID		= 18,
	CM_REJ_INVALID_ALT_LID		= 19,
	CM_REJ_INVALID_ALT_SL		= 20,
	CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	CM_REJ_INVALID_ALT_HOP_LIMIT	= 22,
	CM_REJ_INVALID_ALT_PACKET_RATE	= 23,
	CM_REJ_PORT_CM_REDIRECT		= 24,
	CM_REJ_PORT_REDIRECT		= 25,
	CM_REJ_INVALID_MTU		= 26,
	CM_REJ_INSUFFICIENT_RESP_RES	= 27,
	CM_REJ_CONSUMER_DEFINED		= 28,
	CM_REJ_INVALID_RNR_RETRY	= 29,
	CM_REJ_DUPLICATE_LOCAL_COMM_ID	= 30,
	CM_REJ_INVALID_CLASS_VERSION	= 31,
	CM_REJ_INVALID_FLOW_LABEL	= 32,
	CM_REJ_INVALID_ALT_FLOW_LABEL	= 33,
	CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,	/* rdma_reject_ece */
};
struct cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected;	/* 2 bits, enum cm_rej_msg */
	uint8_t ari_length;		/* 7 bits */
	uint16_t reason;
	uint8_t ari[CM_REJ_ARI];
	uint8_t private_data[CM_REJ_PDATA];
};

/* ConnectReply (IBA 12.6.8, Table 104) */
struct cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;		/* 24 bits */
	uint32_t local_eecn;		/* 24 bits */
	uint32_t starting_psn;		/* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;	/* 5 bits */
	uint8_t failover_accepted;	/* 2 bits */
	uint8_t end_to_end_flow_control;	/* 1 bit */
	uint8_t rnr_retry_count;	/* 3 bits */
	uint8_t srq;			/* 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data[CM_REP_PDATA];
	/* ECE: the vendor ID's three bytes in the reserved bytes after the
	 * local QPN, EECN and starting PSN (high to low), the options in
	 * the attribute modifier, as the Linux CM carries them.
	 */
	uint32_t ece_vendor_id;		/* 24 bits */
	uint32_t ece_options;
};

/* ReadyToUse (12.6.9), DisconnectRequest (12.6.10), DisconnectReply
 * (12.6.11): the two comm IDs (DREQ adds the remote QPN) and private data.
 */
struct cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[CM_RTU_PDATA];
};
struct cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;		/* 24 bits: the receiver's QPN/EECN */
	uint8_t private_data[CM_DREQ_PDATA];
};
struct cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[CM_DREP_PDATA];
};

/* ServiceIDResolutionRequest / Response (IBA 12.11.1, 12.11.2) */
enum cm_sidr_status {
	CM_SIDR_SUCCESS		= 0,
	CM_SIDR_UNSUPPORTED	= 1,	/* service ID not supported */
	CM_SIDR_REJECT		= 2,	/* rejected by the service */
	CM_SIDR_NO_QP		= 3,
	CM_SIDR_REDIRECT	= 4,
	CM_SIDR_UNSUPPORTED_VERSION = 5,
};
struct cm_sidr_req {
	uint32_t request_id;
	uint16_t partition_key;
	uint64_t service_id;
	uint8_t private_data[CM_SIDR_REQ_PDATA];
};
struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;			/* enum cm_sidr_status */
	uint8_t add_info_length;
	uint32_t qpn;			/* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t add_info[CM_SIDR_REP_INFO];
	uint8_t private_data[CM_SIDR_REP_PDATA];
};

/*
 * Read the common header of a received MAD. Returns 0, or -EINVAL when
 * the buffer is not a CM MAD dpib takes: shorter than CM_MAD_LEN, a base
 * version other than 1 or a class other than CM (the header is still
 * filled as far as it was read), -EPROTONOSUPPORT for a CM MAD of a class
 * version other than 2, -EBADMSG for a method other than Send.
 */
int cm_mad_hdr_unpack(const uint8_t *buf, size_t len, struct cm_mad_hdr *h);

/*
 * Each pack writes the 256 bytes at buf: the common header (base version
 * 1, class CM, class version 2, method Send, status 0, attribute @attr_id
 * implied by the message, attribute modifier 0, transaction ID @tid) and
 * the message, reserved bits zero. Each unpack reads the message of a MAD
 * whose header cm_mad_hdr_unpack accepted; it does not look at the header.
 * cm_rej_unpack returns -EINVAL when ari_length exceeds CM_REJ_ARI and
 * cm_sidr_rep_unpack when add_info_length exceeds CM_SIDR_REP_INFO; the
 * others always succeed (0).
 */
void cm_req_pack(const struct cm_req *m, uint64_t tid, uint8_t *buf);
int cm_req_unpack(const uint8_t *buf, struct cm_req *m);
void cm_mra_pack(const struct cm_mra *m, uint64_t tid, uint8_t *buf);
int cm_mra_unpack(const uint8_t *buf, struct cm_mra *m);
void cm_rej_pack(const struct cm_rej *m, uint64_t tid, uint8_t *buf);
int cm_rej_unpack(const uint8_t *buf, struct cm_rej *m);
void cm_rep_pack(const struct cm_rep *m, uint64_t tid, uint8_t *buf);
int cm_rep_unpack(const uint8_t *buf, struct cm_rep *m);
void cm_rtu_pack(const struct cm_rtu *m, uint64_t tid, uint8_t *buf);
int cm_rtu_unpack(const uint8_t *buf, struct cm_rtu *m);
void cm_dreq_pack(const struct cm_dreq *m, uint64_t tid, uint8_t *buf);
int cm_dreq_unpack(const uint8_t *buf, struct cm_dreq *m);
void cm_drep_pack(const struct cm_drep *m, uint64_t tid, uint8_t *buf);
int cm_drep_unpack(const uint8_t *buf, struct cm_drep *m);
void cm_sidr_req_pack(const struct cm_sidr_req *m, uint64_t tid,
		      uint8_t *buf);
int cm_sidr_req_unpack(const uint8_t *buf, struct cm_sidr_req *m);
void cm_sidr_rep_pack(const struct cm_sidr_rep *m, uint64_t tid,
		      uint8_t *buf);
int cm_sidr_rep_unpack(const uint8_t *buf, struct cm_sidr_rep *m);

/* The transaction ID and attribute ID of a MAD, without other checks
 * (a REJ answers a message whose TID it echoes).
 */
uint16_t cm_mad_attr_id(const uint8_t *buf);
uint64_t cm_mad_tid(const uint8_t *buf);

/* "REQ", "REP", ... for logs; "?" for an unknown attribute. */
const char *cm_attr_name(uint16_t attr_id);

#endif /* CM_MSG_H */
