/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * RoCEv2 congestion control: DCQCN (Zhu et al., "Congestion Control for
 * Large-Scale RDMA Deployments", SIGCOMM 2015), the scheme RoCE NICs run.
 *
 * A switch whose queue grows marks ECN-capable frames CE instead of
 * dropping them (the congestion point). The receiving HCA answers a CE
 * frame with a CNP, BTH opcode 0x81 to the sending QP, at most one per QP
 * per cnp_us (the notification point). The sending QP (reaction point)
 * then cuts its rate: target = current, current *= 1 - alpha/2, and alpha,
 * its estimate of how congested the path is, moves toward 1 by g. Without
 * CNPs alpha decays by g every k_us, and the rate climbs back: every t_us
 * and every bc_bytes sent, the first f times halfway to the target (fast
 * recovery), then the target itself rises by ai_mbps (additive increase),
 * by hai_mbps times the steps past f once both timer and byte counter
 * passed f (hyper increase). Back at the line rate a QP is no longer paced.
 *
 * The rate is enforced in the engine: a paced QP's next packet may leave
 * at pace_next, which each packet moves by its length at the current rate;
 * a QP not yet due is skipped for that pass (no waiting). The timers run
 * lazily, when a paced QP looks at whether it may send. The window of
 * ib_cc.c still applies on top: it reacts to loss, DCQCN to marks.
 *
 * All frames of RC and UC QPs go out ECN-capable (ECT(0)) unless the
 * application's traffic class set the ECN bits itself; UD frames and CNPs
 * do not (no reaction point behind them). A peer without DCQCN ignores the
 * ECN bits and drops CNPs as an unknown opcode, so nothing changes on the
 * wire for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>

#include "ib_hca.h"

/* Room a paced QP may make up after the engine came late (TSC). */
#define PACE_BURST_US	20
/* Line rate when the port does not say (a virtual port). */
#define LINE_DEFAULT_MBPS	100000
/* Timer steps taken at once when a QP comes back from idle. */
#define CATCH_UP_MAX	64

/*
 * Defaults: the DCQCN paper's timers and gain (g 1/256, alpha timer 55 us,
 * rate timer 55 us, byte counter 10 MB, 5 fast recovery steps, a CNP per
 * 50 us) with ConnectX's increase steps (additive 5 Mbit/s, hyper
 * 50 Mbit/s, floor 1 Mbit/s). The paper's 40 Mbit/s step was chosen for
 * 40 Gbit/s links: four QPs behind a 1 Gbit/s port then overshoot by more
 * than a 256-frame queue holds before their cuts take hold (measured in
 * the congestion suite, tail drops), with 5 Mbit/s they do not.
 */
void
ib_dcqcn_conf_default(struct ib_dcqcn_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->min_mbps = 1;
	c->ai_mbps = 5;
	c->hai_mbps = 50;
	c->t_us = 55;
	c->k_us = 55;
	c->bc_bytes = 10u << 20;
	c->f = 5;
	c->g_inv = 256;
	c->cnp_us = 50;
}

struct dcqcn_key {
	const char *name;
	size_t off;
	uint32_t min, max;
};

#define KEY(n, lo, hi) { #n, offsetof(struct ib_dcqcn_conf, n), lo, hi }

static const struct dcqcn_key dcqcn_keys[] = {
	KEY(line_mbps, 1, 1000000),
	KEY(min_mbps, 1, 1000000),
	KEY(ai_mbps, 1, 1000000),
	KEY(hai_mbps, 1, 1000000),
	KEY(t_us, 1, 1000000),
	KEY(k_us, 1, 1000000),
	KEY(bc_bytes, 1024, 1u << 30),
	KEY(f, 1, 64),
	KEY(g_inv, 2, 65536),
	KEY(cnp_us, 0, 1000000),
};

/* One "name=value" of the dcqcn key into the configuration @arg. */
static int
set_param(const char *name, const char *val, void *arg, char *why,
	  size_t len)
{
	unsigned int i;
	unsigned long v;
	char *end;

	for (i = 0; i < RTE_DIM(dcqcn_keys); i++)
		if (strcmp(name, dcqcn_keys[i].name) == 0)
			break;
	if (i == RTE_DIM(dcqcn_keys)) {
		snprintf(why, len, "unknown parameter '%s'", name);
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(val, &end, 10);
	if (*val < '0' || *val > '9' || *end != '\0' || errno != 0 ||
	    v < dcqcn_keys[i].min || v > dcqcn_keys[i].max) {
		snprintf(why, len, "%s must be %u..%u", name,
			 dcqcn_keys[i].min, dcqcn_keys[i].max);
		return -EINVAL;
	}
	*(uint32_t *)((char *)arg + dcqcn_keys[i].off) = (uint32_t)v;
	return 0;
}

/* "ai_mbps=5,t_us=55,...": the keys given replace the defaults. */
int
ib_dcqcn_parse(const char *spec, struct ib_dcqcn_conf *c, char *why,
	       size_t len)
{
	int ret = ib_kv_walk(spec, set_param, c, why, len);

	if (ret == 0 && c->line_mbps != 0 && c->min_mbps > c->line_mbps) {
		snprintf(why, len, "min_mbps above line_mbps");
		return -EINVAL;
	}
	return ret;
}

void
ib_dcqcn_dev_init(struct ib_dev *dev)
{
	const struct ib_dcqcn_conf *c = &dev->conf.dcqcn;
	struct ib_dcqcn_dev *d = &dev->dcqcn;
	double per_us = rte_get_tsc_hz() / 1e6;

	d->t_tsc = (uint64_t)(c->t_us * per_us);
	d->k_tsc = (uint64_t)(c->k_us * per_us);
	d->cnp_tsc = (uint64_t)(c->cnp_us * per_us);
	d->burst_tsc = (uint64_t)(PACE_BURST_US * per_us);
	d->tsc_per_us = per_us;
	d->line = c->line_mbps;
}

/* The rate a QP starts from: the configured one, else the port's. */
static double
line_rate(struct ib_dev *dev)
{
	struct rte_eth_link link;

	if (dev->dcqcn.line == 0) {
		dev->dcqcn.line = LINE_DEFAULT_MBPS;
		if (rte_eth_link_get_nowait(dev->port_id, &link) == 0 &&
		    link.link_speed != 0 &&
		    link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
			dev->dcqcn.line = link.link_speed;
	}
	return dev->dcqcn.line;
}

void
ib_dcqcn_qp_init(struct ib_qp *qp)
{
	struct ib_rp *rp = &qp->rp;

	memset(rp, 0, sizeof(*rp));
	rp->alpha = 1.0;
	rp->tx_since = rte_rdtsc();
}

/*
 * The rate an unpaced QP was sending at: what it sent since it was last
 * paced (or created), over that time, at most the line rate. The first
 * cut starts from there: from the line rate, a QP on a fast port would
 * need many CNPs before its pacing meant anything.
 */
static double
measured_rate(struct ib_qp *qp, uint64_t now)
{
	struct ib_rp *rp = &qp->rp;
	double line = line_rate(qp->dev);
	double us = (now - rp->tx_since) / qp->dev->dcqcn.tsc_per_us;

	if (us <= 0 || rp->tx_bytes == 0)
		return line;
	return RTE_MIN(line, rp->tx_bytes * 8 / us);
}

/* Set the current rate; at the line rate the QP is no longer paced. */
static void
set_rate(struct ib_qp *qp, double rc)
{
	struct ib_dev *dev = qp->dev;
	struct ib_rp *rp = &qp->rp;
	double line = line_rate(dev);

	rc = RTE_MAX(rc, (double)dev->conf.dcqcn.min_mbps);
	if (rc >= line * 0.999) {
		rp->rc = rp->rt = line;
		if (rp->limited) {
			rp->tx_bytes = 0;
			rp->tx_since = rte_rdtsc();
		}
		rp->limited = 0;
		__atomic_store_n(&rp->rate_mbps, 0, __ATOMIC_RELAXED);
		return;
	}
	rp->rc = rc;
	rp->tsc_per_byte = 8 * dev->dcqcn.tsc_per_us / rc;
	__atomic_store_n(&rp->rate_mbps, (uint32_t)(rc + 0.5),
			 __ATOMIC_RELAXED);
	if (!rp->limited) {
		rp->limited = 1;
		rp->pace_next = rte_rdtsc();
	}
}

/* A timer or byte counter step: toward the target, the target upward. */
static void
increase(struct ib_qp *qp)
{
	const struct ib_dcqcn_conf *c = &qp->dev->conf.dcqcn;
	struct ib_rp *rp = &qp->rp;
	uint32_t hi = RTE_MAX(rp->t_cnt, rp->bc_cnt);
	uint32_t lo = RTE_MIN(rp->t_cnt, rp->bc_cnt);

	if (lo >= c->f)
		rp->rt += (double)(lo - c->f + 1) * c->hai_mbps;
	else if (hi >= c->f)
		rp->rt += c->ai_mbps;
	rp->rt = RTE_MIN(rp->rt, line_rate(qp->dev));
	set_rate(qp, (rp->rc + rp->rt) / 2);
}

/* Run the alpha and rate timers up to @now. */
static void
timers(struct ib_qp *qp, uint64_t now)
{
	const struct ib_dcqcn_dev *d = &qp->dev->dcqcn;
	double g = 1.0 / qp->dev->conf.dcqcn.g_inv;
	struct ib_rp *rp = &qp->rp;
	int n;

	for (n = 0; now >= rp->alpha_tsc && n < CATCH_UP_MAX; n++) {
		rp->alpha *= 1 - g;	/* no CNP for a whole period */
		rp->alpha_tsc += d->k_tsc;
	}
	if (now >= rp->alpha_tsc)
		rp->alpha_tsc = now + d->k_tsc;
	for (n = 0; rp->limited && now >= rp->inc_tsc && n < CATCH_UP_MAX;
	     n++) {
		rp->inc_tsc += d->t_tsc;
		rp->t_cnt++;
		increase(qp);
	}
	if (now >= rp->inc_tsc)
		rp->inc_tsc = now + d->t_tsc;
}

/* A CNP for this QP: cut the rate (DCQCN's rate decrease). */
void
ib_dcqcn_cnp_rx(struct ib_qp *qp)
{
	struct ib_dev *dev = qp->dev;
	double g = 1.0 / dev->conf.dcqcn.g_inv;
	struct ib_rp *rp = &qp->rp;
	uint64_t now = rte_rdtsc();

	if (dev->conf.dcqcn.disabled)
		return;
	if (!rp->limited)
		rp->rc = rp->rt = measured_rate(qp, now);
	else
		timers(qp, now);
	rp->rt = rp->rc;
	rp->alpha = (1 - g) * rp->alpha + g;
	rp->t_cnt = rp->bc_cnt = 0;
	rp->bytes = 0;
	rp->alpha_tsc = now + dev->dcqcn.k_tsc;
	rp->inc_tsc = now + dev->dcqcn.t_tsc;
	set_rate(qp, rp->rc * (1 - rp->alpha / 2));
	ib_count(dev, IB_CNT_DCQCN_RATE_CUT);
}

/*
 * A paced QP sent @bytes (a frame): the next may leave that much later,
 * counted from now at the latest minus what a late engine may make up.
 */
void
ib_dcqcn_sent(struct ib_qp *qp, uint32_t bytes)
{
	struct ib_rp *rp = &qp->rp;
	uint64_t now = rte_rdtsc();
	uint64_t from = now - qp->dev->dcqcn.burst_tsc;

	if (rp->pace_next > from)
		from = rp->pace_next;
	rp->pace_next = from + (uint64_t)(bytes * rp->tsc_per_byte);
	rp->bytes += bytes;
	if (rp->bytes >= qp->dev->conf.dcqcn.bc_bytes) {
		rp->bytes = 0;
		rp->bc_cnt++;
		increase(qp);
	}
}

/* May a paced QP send now? Runs its timers first. */
int
ib_dcqcn_may_send(struct ib_qp *qp)
{
	struct ib_rp *rp = &qp->rp;
	uint64_t now = rte_rdtsc();

	if (now >= rp->inc_tsc || now >= rp->alpha_tsc)
		timers(qp, now);
	if (!rp->limited || now >= rp->pace_next)
		return 1;
	/* The transport timer does not count the wait for its own pacer,
	 * as it does not count an RNR wait: it times the peer from what was
	 * sent last. At the floor rate (min_mbps) a message of many packets
	 * takes longer than a short timeout to send, its ACK due after the
	 * last, and each expiry rewound it to the first packet again.
	 */
	if (qp->comp.deadline != 0 && qp->timeout_tsc != 0 &&
	    qp->comp.deadline < rp->pace_next + qp->timeout_tsc)
		qp->comp.deadline = rp->pace_next + qp->timeout_tsc;
	return 0;
}

/* Send a CNP to the peer QP (RoCEv2 A17.9.3): BTH, BECN set, 16 zeros. */
static void
send_cnp(struct ib_qp *qp)
{
	uint8_t *bth, *pay;
	struct rte_mbuf *m;

	m = ib_pkt_alloc(qp, IB_CNP, 0, &bth, &pay);
	if (m == NULL)
		return;
	ib_pkt_bth(bth, IB_CNP, 0, qp->path.dest_qpn, 0, 0);
	bth[4] |= 0x40;				/* BECN */
	memset(bth + IB_BTH_LEN, 0, 16);
	/* Not ECN-capable: no reaction point would answer a mark on it. */
	ip_set_ecn(rte_pktmbuf_mtod(m, uint8_t *) + m->l2_len, 0);
	ib_tx(qp->dev, m);
	ib_count(qp->dev, IB_CNT_CNP_SENT);
}

/* A frame for @qp arrived marked CE (the notification point). */
void
ib_dcqcn_ce_rx(struct ib_qp *qp)
{
	struct ib_dev *dev = qp->dev;
	uint64_t now;

	ib_count(dev, IB_CNT_ECN_MARKED_RX);
	if (dev->conf.dcqcn.disabled || qp->ibv.qp_type == IBV_QPT_UD)
		return;		/* UD: no peer QP to notify */
	now = rte_rdtsc();
	if (qp->rp.np_last != 0 && now - qp->rp.np_last < dev->dcqcn.cnp_tsc)
		return;
	qp->rp.np_last = now;
	send_cnp(qp);
}

/*
 * The rates of the paced QPs (control path, racy by nature: each value is
 * one the engine wrote). Returns how many were stored.
 */
uint32_t
ib_dcqcn_rates(struct ib_dev *dev, uint32_t *qpn, uint32_t *mbps,
	       uint32_t max)
{
	uint32_t i, n = 0;

	rte_spinlock_lock(&dev->ctl_lock);
	for (i = 0; i < IB_MAX_QP && n < max; i++) {
		struct ib_qp *qp = dev->qp_tbl[i];
		uint32_t r;

		if (qp == NULL)
			continue;
		r = __atomic_load_n(&qp->rp.rate_mbps, __ATOMIC_RELAXED);
		if (r == 0)
			continue;
		qpn[n] = i;
		mbps[n++] = r;
	}
	rte_spinlock_unlock(&dev->ctl_lock);
	return n;
}
