/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Multicast groups for UD QPs (ibv_attach_mcast). On RoCEv2 a group's GID
 * is its IP multicast address: an IPv6 one (ff00::/8) as it is, an IPv4
 * one (224.0.0.0/4) IPv4-mapped (::ffff:224.0.0.0/4). A group of a family
 * the device has no address of, or any other GID, is EINVAL. A packet to
 * a group's address with destination QP 0xFFFFFF reaches every attached
 * QP (IBA 10.5.2.4), whichever engine owns it (ib_rx.c).
 *
 * The device's own multicast is not looped back as frames to its own MAC
 * are (ib_tx.c): it goes to the port (MAC 33:33:xx:xx:xx:xx or
 * 01:00:5e:xx:xx:xx) and comes back only where the port returns it (a
 * net_ring loopback port returns every frame).
 *
 * The table changes on the engine (ib_engine_exec: no engine runs a pass
 * meanwhile); engines read it per multicast frame received. It is small
 * and scanned whole: the key compares as two 64-bit words, the low one
 * (which holds an IPv4 group's address) first.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <rte_ip.h>

#include "ib_hca.h"

struct mcast_op {
	struct ib_qp *qp;
	union ibv_gid gid;
	int attach;
	int err;
};

static struct ib_mcast_group *
group_find(struct ib_dev *dev, const union ibv_gid *gid)
{
	struct ib_mcast_group *g;
	uint32_t i;

	for (i = 0; i < IB_MAX_MCAST_GRP; i++) {
		g = &dev->mcast[i];
		if (g->nqp != 0 &&
		    g->gid.global.interface_id == gid->global.interface_id &&
		    g->gid.global.subnet_prefix == gid->global.subnet_prefix)
			return g;
	}
	return NULL;
}

static int
group_attach(struct ib_dev *dev, struct ib_qp *qp, const union ibv_gid *gid)
{
	struct ib_mcast_group *g = group_find(dev, gid);
	uint32_t i;

	if (g == NULL) {
		for (i = 0; i < IB_MAX_MCAST_GRP && dev->mcast[i].nqp; i++)
			;
		if (i == IB_MAX_MCAST_GRP)
			return ENOMEM;
		g = &dev->mcast[i];
		g->gid = *gid;
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
group_detach(struct ib_dev *dev, struct ib_qp *qp, const union ibv_gid *gid)
{
	struct ib_mcast_group *g = group_find(dev, gid);
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

	op->err = op->attach ? group_attach(dev, op->qp, &op->gid) :
			       group_detach(dev, op->qp, &op->gid);
}

/*
 * A multicast GID the device can hear: IPv6 multicast (RFC 4291 2.7) on a
 * device with an IPv6 address, IPv4-mapped (RFC 4291 2.5.5.2) IPv4
 * multicast on one with an IPv4 address. Receive takes no frame of a
 * family the device has no address of (ib_rx.c), so such a group would
 * stay silent.
 */
static int
gid_is_group(const struct ib_dev *dev, const union ibv_gid *gid)
{
	uint32_t ip;

	if (gid->raw[0] == 0xff)
		return dev->conf.has_ip6;
	if (!ib_gid_is_v4(gid))
		return 0;
	memcpy(&ip, &gid->raw[12], 4);
	return dev->conf.ip != 0 && ib_ipv4_is_mcast(ip);
}

int
ib_mcast_change(struct ib_qp *qp, const union ibv_gid *gid, int attach)
{
	struct mcast_op op = { .qp = qp, .attach = attach };
	int err;

	if (qp->ibv.qp_type != IBV_QPT_UD || !gid_is_group(qp->dev, gid))
		return EINVAL;
	op.gid = *gid;
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

/*
 * Engine: the QPs a multicast packet goes to (may be none), by the
 * destination address of its IPv4 or IPv6 header @l3.
 */
struct ib_mcast_group *
ib_mcast_lookup(struct ib_dev *dev, const uint8_t *l3)
{
	union ibv_gid gid = { .raw = { [10] = 0xff, [11] = 0xff } };

	if ((l3[0] >> 4) == 6)
		memcpy(gid.raw, l3 + offsetof(struct rte_ipv6_hdr, dst_addr),
		       sizeof(gid.raw));
	else
		memcpy(&gid.raw[12],
		       l3 + offsetof(struct rte_ipv4_hdr, dst_addr), 4);
	return group_find(dev, &gid);
}
