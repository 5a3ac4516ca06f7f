/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Multicast groups for UD QPs (ibv_attach_mcast): RoCEv2 over IPv4 uses
 * IPv4-mapped multicast GIDs (::ffff:224.0.0.0/4). A packet to such an
 * address with destination QP 0xFFFFFF reaches every attached QP (IBA
 * 10.5.2.4). The table changes on the engine (ib_engine_exec), which is
 * also the only reader.
 */
#include <errno.h>
#include <string.h>

#include "ib_hca.h"

struct mcast_op {
	struct ib_qp *qp;
	uint32_t ip;
	int attach;
	int err;
};

static struct ib_mcast_group *
group_find(struct ib_dev *dev, uint32_t ip)
{
	uint32_t i;

	for (i = 0; i < IB_MAX_MCAST_GRP; i++)
		if (dev->mcast[i].nqp != 0 && dev->mcast[i].ip == ip)
			return &dev->mcast[i];
	return NULL;
}

static int
group_attach(struct ib_dev *dev, struct ib_qp *qp, uint32_t ip)
{
	struct ib_mcast_group *g = group_find(dev, ip);
	uint32_t i;

	if (g == NULL) {
		for (i = 0; i < IB_MAX_MCAST_GRP && dev->mcast[i].nqp; i++)
			;
		if (i == IB_MAX_MCAST_GRP)
			return ENOMEM;
		g = &dev->mcast[i];
		g->ip = ip;
	}
	for (i = 0; i < g->nqp; i++)
		if (g->qps[i] == qp)
			return 0;	/* attaching twice is not an error */
	if (g->nqp == IB_MAX_MCAST_QPS)
		return ENOMEM;
	g->qps[g->nqp++] = qp;
	return 0;
}

static int
group_detach(struct ib_dev *dev, struct ib_qp *qp, uint32_t ip)
{
	struct ib_mcast_group *g = group_find(dev, ip);
	uint32_t i;

	if (g == NULL)
		return EINVAL;
	for (i = 0; i < g->nqp; i++)
		if (g->qps[i] == qp) {
			g->qps[i] = g->qps[--g->nqp];
			return 0;
		}
	return EINVAL;
}

static void
mcast_apply(void *arg)
{
	struct mcast_op *op = arg;
	struct ib_dev *dev = op->qp->dev;

	op->err = op->attach ? group_attach(dev, op->qp, op->ip) :
			       group_detach(dev, op->qp, op->ip);
}

int
ib_mcast_change(struct ib_qp *qp, const union ibv_gid *gid, int attach)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };
	struct mcast_op op = { .qp = qp, .attach = attach };
	int err;

	if (qp->ibv.qp_type != IBV_QPT_UD)
		return EINVAL;
	if (memcmp(gid->raw, v4map, sizeof(v4map)) != 0)
		return EINVAL;	/* only IPv4-mapped GIDs: no IPv6 yet */
	memcpy(&op.ip, &gid->raw[12], 4);
	if (!ib_ipv4_is_mcast(op.ip))
		return EINVAL;
	err = ib_engine_exec(qp->dev, mcast_apply, &op);
	return err ? err : op.err;
}

/* Engine: a QP going away leaves every group. */
void
ib_mcast_forget_qp(struct ib_qp *qp)
{
	uint32_t i, j;

	for (i = 0; i < IB_MAX_MCAST_GRP; i++) {
		struct ib_mcast_group *g = &qp->dev->mcast[i];

		for (j = 0; j < g->nqp; j++)
			if (g->qps[j] == qp)
				g->qps[j--] = g->qps[--g->nqp];
	}
}

/* Engine: the QPs a multicast packet to @ip goes to (may be none). */
struct ib_mcast_group *
ib_mcast_lookup(struct ib_dev *dev, uint32_t ip)
{
	return group_find(dev, ip);
}
