/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_COUNTERS_H
#define IB_COUNTERS_H

/*
 * Per-device counters, one set per engine (its shard's): each written by
 * that engine only, summed when read (telemetry, dpib_counters).
 */
#define IB_COUNTERS(X) \
	X(TX_PKTS,		"tx_packets") \
	X(RX_PKTS,		"rx_packets") \
	X(TX_DROP_NOMBUF,	"tx_drop_no_mbuf") \
	X(TX_DROP_FULL,		"tx_drop_queue_full") \
	X(TX_DROP_LINK_DOWN,	"tx_drop_link_down") \
	X(TX_WAIT_NEIGH,	"tx_wait_neighbour") \
	X(TX_DROP_UNREACHABLE,	"tx_drop_ud_unreachable") \
	X(TX_ZERO_COPY,		"tx_zero_copy_packets") \
	X(TX_LOOPBACK,		"tx_loopback_packets") \
	X(TX_LOOPBACK_DROP,	"tx_drop_loopback_full") \
	X(RX_NOT_ROCE,		"rx_drop_not_roce") \
	X(RX_BAD_VLAN,		"rx_drop_vlan_mismatch") \
	X(RX_BAD_LEN,		"rx_drop_bad_length") \
	X(RX_BAD_ICRC,		"rx_drop_bad_icrc") \
	X(RX_BAD_VERSION,	"rx_drop_bad_version") \
	X(RX_BAD_PKEY,		"rx_drop_bad_pkey") \
	X(RX_BAD_OPCODE,	"rx_drop_bad_opcode") \
	X(RX_NO_QP,		"rx_drop_unknown_qpn") \
	X(RX_BAD_STATE,		"rx_drop_qp_state") \
	X(RX_BAD_TRANSPORT,	"rx_drop_qp_type") \
	X(RX_DUP,		"rx_duplicate_request") \
	X(RX_OUT_OF_SEQ,	"rx_out_of_sequence") \
	X(RX_STALE_RESP,	"rx_drop_stale_response") \
	X(RX_RESP_BAD_PSN,	"rx_drop_response_psn_invalid") \
	X(RX_BAD_PATH,		"rx_drop_path_mismatch") \
	X(RX_BAD_QKEY,		"rx_drop_bad_qkey") \
	X(RX_NO_RWQE,		"rx_drop_ud_no_receive_wqe") \
	X(RX_BAD_MAD,		"rx_drop_gsi_bad_mad") \
	X(RX_MAD_CLASS,		"rx_drop_gsi_unknown_class") \
	X(RX_MCAST_NO_GROUP,	"rx_drop_multicast_no_group") \
	X(RX_HANDOFF,		"rx_handed_to_engine") \
	X(RX_HANDOFF_DROP,	"rx_drop_handoff_full") \
	X(RNR_NAK_SENT,		"rnr_nak_sent") \
	X(RNR_NAK_RCVD,		"rnr_nak_received") \
	X(NAK_SENT,		"nak_sent") \
	X(NAK_RCVD,		"nak_received") \
	X(ACK_SENT,		"ack_sent") \
	X(RETRANSMIT,		"retransmit_timeout") \
	X(TIMER_REARMED,	"retransmit_timer_rearmed") \
	X(CWND_CUT,		"cwnd_halved_on_nak") \
	X(CWND_TIMEOUT,		"cwnd_reset_on_timeout") \
	X(CWND_LIMITED,		"tx_cwnd_limited") \
	X(READ_GAP_RETRY,	"read_response_gap_retry") \
	X(EARLY_RESEND,		"early_resend") \
	X(ECN_MARKED_RX,	"ecn_marked_received") \
	X(CNP_SENT,		"cnp_sent") \
	X(CNP_RCVD,		"cnp_received") \
	X(DCQCN_RATE_CUT,	"dcqcn_rate_cut") \
	X(CQ_OVERRUN,		"cq_overrun") \
	X(FAULT_DROP,		"fault_dropped") \
	X(FAULT_DUP,		"fault_duplicated") \
	X(FAULT_REORDER,	"fault_reordered") \
	X(FAULT_CORRUPT,	"fault_corrupted") \
	X(FAULT_DELAY,		"fault_delayed") \
	X(FAULT_QUEUE_DROP,	"fault_bottleneck_tail_drop") \
	X(FAULT_ECN_MARK,	"fault_bottleneck_ecn_marked") \
	X(ARP_RX,		"arp_rx") \
	X(ARP_RX_MALFORMED,	"arp_rx_drop_malformed") \
	X(ARP_RX_UNSUPPORTED,	"arp_rx_drop_unsupported") \
	X(ARP_RX_IGNORED,	"arp_rx_ignored") \
	X(ARP_IP_CONFLICT,	"arp_ip_conflict") \
	X(ARP_REQUEST_SENT,	"arp_request_sent") \
	X(ARP_REPLY_SENT,	"arp_reply_sent") \
	X(GARP_SENT,		"arp_gratuitous_sent") \
	X(ARP_FAILED,		"arp_resolve_failed") \
	X(ARP_TABLE_FULL,	"arp_table_full") \
	X(ND_RX,		"nd_rx") \
	X(ND_RX_MALFORMED,	"nd_rx_drop_malformed") \
	X(ND_RX_BAD_HOPLIMIT,	"nd_rx_drop_hop_limit") \
	X(ND_RX_IGNORED,	"nd_rx_ignored") \
	X(ND_SOLICIT_SENT,	"nd_solicitation_sent") \
	X(ND_ADVERT_SENT,	"nd_advertisement_sent") \
	X(ND_FAILED,		"nd_resolve_failed") \
	X(PORT_RX_MISSED,	"port_rx_missed") \
	X(PORT_RX_NOMBUF,	"port_rx_no_mbuf") \
	X(PORT_RX_ERRORS,	"port_rx_errors") \
	X(PORT_TX_ERRORS,	"port_tx_errors") \
	X(CYCLES_RECEIVE,	"engine_cycles_receive") \
	X(CYCLES_SEND,		"engine_cycles_send") \
	X(LOOP_MOVES,		"engine_loop_cpu_moves") \
	X(POLL_LINGER_ANSWERED,	"poll_linger_answered") \
	X(POLL_LINGER_MISSED,	"poll_linger_missed") \
	X(UNMAP_FENCE,		"engine_unmap_fences") \
	X(CTL_DIRECT,		"engine_ctl_direct") \
	X(CTL_QUEUED,		"engine_ctl_queued") \
	X(MEMIF_INTR,		"engine_memif_interrupts") \
	X(HEAVY_FENCE,		"engine_heavy_fences") \
	X(QP_HOT,		"engine_hot_qps")

#define IB_CNT_ENUM(e, s) IB_CNT_ ## e,
enum ib_counter {
	IB_COUNTERS(IB_CNT_ENUM)
	IB_CNT_NUM
};
#undef IB_CNT_ENUM

extern const char *const ib_counter_names[IB_CNT_NUM];

#endif /* IB_COUNTERS_H */
