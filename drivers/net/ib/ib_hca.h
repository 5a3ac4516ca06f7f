/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_HCA_H
#define IB_HCA_H

/*
 * The driver's own header, for its files: the log types, then
 *   ib_param.h   limits and tunables
 *   ib_verbs.h   the objects' layouts (PD ... QP, device) and their helpers
 *   ib_loc.h     what each file offers the others
 * and through them the wire format (ib_wire.h, ib_opcode.h), the rings
 * (ib_queue.h), the counters, DCQCN's state and the HCA interface that
 * lib/verbs sees (hca_if.h, ib_conf.h).
 */
#include <rte_log.h>

extern int ib_logtype;
extern int ib_logtype_dp;

#define IB_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, ib_logtype, "%s(): " fmt "\n", \
		__func__, ##__VA_ARGS__)
/* Data path: compiled out above RTE_LOG_DP_LEVEL (INFO unless debug). */
#define IB_DP_LOG(level, fmt, ...) do { \
	if (RTE_LOG_ ## level <= RTE_LOG_DP_LEVEL) \
		rte_log(RTE_LOG_ ## level, ib_logtype_dp, "%s(): " fmt "\n", \
			__func__, ##__VA_ARGS__); \
} while (0)

#include "ib_param.h"
#include "ib_verbs.h"
#include "ib_loc.h"

#endif
