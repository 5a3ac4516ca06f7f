/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_DCQCN_H
#define IB_DCQCN_H

/*
 * RoCEv2 congestion control, DCQCN (ib_dcqcn.c): the layouts the device
 * and the QP embed, and the parameters a device is configured with.
 */
#include <stddef.h>
#include <stdint.h>

#include "ib_conf.h"

struct ib_dev;
struct ib_qp;

/* What the device derives from them once (TSC units). */
struct ib_dcqcn_dev {
	uint64_t t_tsc, k_tsc, cnp_tsc, burst_tsc;
	double line;		/* Mbit/s; 0 until the first CNP asks */
	double tsc_per_us;	/* TSC ticks a microsecond */
};

/*
 * Reaction point of a QP (its sending side) and its notification point
 * (the CNPs it sends for what it receives). `limited` and `pace_next` are
 * read for every packet; the rest on a CNP or a timer.
 */
struct ib_rp {
	uint8_t limited;	/* paced below the line rate */
	uint32_t rate_mbps;	/* rc, rounded, for telemetry */
	uint64_t pace_next;	/* TSC: the next packet may leave then */
	double tsc_per_byte;	/* at rc */
	double rc, rt;		/* current and target rate, Mbit/s */
	double alpha;
	uint64_t alpha_tsc;	/* next alpha update */
	uint64_t inc_tsc;	/* next increase by the timer */
	uint64_t bytes;		/* sent toward the byte counter */
	uint32_t t_cnt, bc_cnt;	/* increases by timer, by byte counter */
	uint64_t tx_bytes;	/* sent since tx_since, paced or not */
	uint64_t tx_since;	/* TSC: unpaced since then */
	uint64_t np_last;	/* NP: the last CNP sent for this QP (TSC) */
};

void ib_dcqcn_dev_init(struct ib_dev *dev);
void ib_dcqcn_qp_init(struct ib_qp *qp);
void ib_dcqcn_cnp_rx(struct ib_qp *qp);
void ib_dcqcn_ce_rx(struct ib_qp *qp);
void ib_dcqcn_sent(struct ib_qp *qp, uint32_t bytes);
int ib_dcqcn_may_send(struct ib_qp *qp);

#endif
