/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Fault injection on a device's transmit path, for testing the transport
 * against a lossy Ethernet: each RoCE frame may be dropped, duplicated,
 * held back behind later frames (reordered), delayed, or have one bit
 * flipped (the receiver then sees a bad ICRC). Requests and responses have
 * their own rates. The random stream is seeded, so a run can be repeated.
 *
 * Configured per device ("faults", "faults_req", "faults_resp" keys), e.g.
 *   faults = drop=0.01,dup=0.005,reorder=0.01,corrupt=0.001,delay=0.01,
 *            delay_us=200,seed=7
 * nak_drop=N loses the next N requests to a peer QP after each PSN
 * sequence NAK the device receives from it: the first frames of the
 * go-back-N resend, so that the
 * peer, which NAKs once and then ignores what is out of sequence (IBA
 * allows it; rxe does), stays silent and only the local ACK timer can
 * recover.
 *
 * rate_mbps=R,queue=Q puts the device behind a slow switch port: RoCE
 * frames (both directions: it is the port's egress) leave at R Mbit/s from
 * a queue of Q frames (default 256), and a frame that finds the queue full
 * is dropped (tail drop), as in a shallow-buffered switch. The drops are
 * counted apart from the random ones.
 *
 * ecn_kmin=K1,ecn_kmax=K2,ecn_pmax=P adds the congestion point of DCQCN
 * (RED-style ECN marking, as datacenter switches do): an ECN-capable frame
 * that leaves K1 or more frames queued is marked CE with a probability
 * rising linearly to P at K2 (default: the queue; P default 1), and always
 * from K2 on. Frames that are not ECN-capable are never marked (the tail
 * drop still applies to them).
 * Engine only: it runs inside ib_tx_flush.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_kvargs.h>
#include <rte_malloc.h>

#include "ib_hca.h"

#define FAULT_HOLD	256	/* frames held back at once */

static const char *const fault_keys[] = {
	"drop", "dup", "reorder", "corrupt", "delay", "delay_us", "seed",
	"nak_drop", "rate_mbps", "queue", "ecn_kmin", "ecn_kmax", "ecn_pmax",
	NULL,
};

struct held {
	struct rte_mbuf *m;
	uint64_t until;		/* TSC: due then at the latest */
	uint8_t reorder;	/* also due as soon as a later frame leaves */
};

struct ib_fault {
	struct ib_fault_rates dir[2];	/* 0: requests, 1: responses */
	uint64_t rng;
	struct held hold[FAULT_HOLD];
	uint32_t nhold;
	uint32_t nak_drop_left;		/* requests still to lose (nak_drop) */
	uint32_t nak_qpn;		/* ... to this destination QP */
	/* The bottleneck: a FIFO of frames drained at a byte rate. */
	struct rte_mbuf **bq;
	uint32_t bq_head, bq_n, bq_cap;
	uint32_t kmin, kmax;		/* ECN marking thresholds, 0: none */
	double pmax;
	double bytes_per_tsc;
	double tokens;			/* bytes that may leave now */
	uint64_t last_tsc;
};

#define FAULT_QUEUE_DEFAULT	256
#define FAULT_QUEUE_MAX		65536
/* A port sends a frame at a time: at most two may leave back to back. */
#define FAULT_BURST_BYTES	(2 * 9216)

static int
set_rate(const char *key, const char *val, void *arg)
{
	struct ib_fault_rates *r = arg;
	uint32_t *frames;
	char *end;
	double v = strtod(val, &end);

	if (*end != '\0' || v < 0)
		return -EINVAL;
	if (strcmp(key, "delay_us") == 0) {
		r->delay_us = (uint32_t)v;
		return 0;
	}
	if (strcmp(key, "seed") == 0) {
		r->seed = (uint64_t)v;
		return 0;
	}
	if (strcmp(key, "nak_drop") == 0) {
		r->nak_drop = (uint32_t)v;
		return 0;
	}
	if (strcmp(key, "rate_mbps") == 0) {
		r->rate_mbps = (uint32_t)v;
		return 0;
	}
	frames = strcmp(key, "queue") == 0 ? &r->queue :
		 strcmp(key, "ecn_kmin") == 0 ? &r->ecn_kmin :
		 strcmp(key, "ecn_kmax") == 0 ? &r->ecn_kmax : NULL;
	if (frames != NULL) {		/* a count of queued frames */
		if (v < 1 || v > FAULT_QUEUE_MAX)
			return -EINVAL;
		*frames = (uint32_t)v;
		return 0;
	}
	if (v > 1)
		return -EINVAL;
	if (strcmp(key, "drop") == 0)
		r->drop = v;
	else if (strcmp(key, "dup") == 0)
		r->dup = v;
	else if (strcmp(key, "reorder") == 0)
		r->reorder = v;
	else if (strcmp(key, "corrupt") == 0)
		r->corrupt = v;
	else if (strcmp(key, "ecn_pmax") == 0)
		r->ecn_pmax = v;
	else
		r->delay = v;
	return 0;
}

/* Parse "drop=0.01,..." into @r (keys absent keep their value). */
int
ib_fault_parse(const char *spec, struct ib_fault_rates *r)
{
	struct rte_kvargs *kv = rte_kvargs_parse(spec, fault_keys);
	int ret;

	if (kv == NULL)
		return -EINVAL;
	ret = rte_kvargs_process(kv, NULL, set_rate, r);
	rte_kvargs_free(kv);
	if (r->delay_us == 0)
		r->delay_us = 100;
	r->enabled = r->drop > 0 || r->dup > 0 || r->reorder > 0 ||
		     r->corrupt > 0 || r->delay > 0 || r->nak_drop > 0 ||
		     r->rate_mbps > 0;
	return ret;
}

/* The port's rate and queue: those of requests, else of responses. */
static int
bottleneck_init(struct ib_fault *f)
{
	const struct ib_fault_rates *r = f->dir[0].rate_mbps ? &f->dir[0] :
					 &f->dir[1];

	if (r->rate_mbps == 0)
		return 0;
	f->bq_cap = r->queue ? r->queue : FAULT_QUEUE_DEFAULT;
	f->bq = rte_zmalloc("ib_fault_bq", f->bq_cap * sizeof(*f->bq), 0);
	if (f->bq == NULL)
		return -ENOMEM;
	f->bytes_per_tsc = r->rate_mbps * 1e6 / 8 / rte_get_tsc_hz();
	if (r->ecn_kmin != 0) {
		f->kmin = r->ecn_kmin;
		f->kmax = r->ecn_kmax > f->kmin ? r->ecn_kmax : f->bq_cap;
		f->pmax = r->ecn_pmax > 0 ? r->ecn_pmax : 1;
	}
	f->tokens = FAULT_BURST_BYTES;
	f->last_tsc = rte_rdtsc();
	return 0;
}

int
ib_fault_init(struct ib_dev *dev)
{
	const struct ib_dev_conf *c = &dev->conf;

	if (!c->fault[0].enabled && !c->fault[1].enabled)
		return 0;
	dev->fault = rte_zmalloc("ib_fault", sizeof(*dev->fault), 0);
	if (dev->fault == NULL)
		return -ENOMEM;
	dev->fault->dir[0] = c->fault[0];
	dev->fault->dir[1] = c->fault[1];
	dev->fault->rng = (c->fault[0].seed ^ (c->fault[1].seed << 1)) | 1;
	return bottleneck_init(dev->fault);
}

void
ib_fault_fini(struct ib_dev *dev)
{
	uint32_t i;

	if (dev->fault == NULL)
		return;
	for (i = 0; i < dev->fault->nhold; i++)
		rte_pktmbuf_free(dev->fault->hold[i].m);
	for (i = 0; i < dev->fault->bq_n; i++)
		rte_pktmbuf_free(dev->fault->bq[(dev->fault->bq_head + i) %
						 dev->fault->bq_cap]);
	rte_free(dev->fault->bq);
	rte_free(dev->fault);
	dev->fault = NULL;
}

/* xorshift64*: a uniform double in [0, 1). */
static double
rnd(struct ib_fault *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (double)((f->rng * 0x2545f4914f6cdd1dull) >> 11) / (1ull << 53);
}

/* Where ib_pkt_alloc put the BTH: past Eth [+ 802.1Q], IP and UDP. */
static inline uint32_t
bth_off(const struct rte_mbuf *m)
{
	return m->l2_len + m->l3_len + 8;
}

/* Which rate set applies: requests, responses, or none (not RoCE). */
static const struct ib_fault_rates *
rates_for(struct ib_fault *f, struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t mask;

	/* ib_pkt_alloc recorded the encapsulation; ARP/ND frames have none. */
	if (m->l3_len == 0 ||
	    rte_pktmbuf_data_len(m) < bth_off(m) + IB_BTH_LEN)
		return NULL;
	mask = ib_opcode[p[bth_off(m)]].mask;
	return &f->dir[(mask & IB_M_RESP) ? 1 : 0];
}

static void
hold(struct ib_dev *dev, struct rte_mbuf *m, uint64_t until, int reorder)
{
	struct ib_fault *f = dev->fault;

	if (f->nhold == FAULT_HOLD) {
		rte_pktmbuf_free(m);	/* a full delay line drops */
		ib_count(dev, IB_CNT_FAULT_DROP);
		return;
	}
	f->hold[f->nhold].m = m;
	f->hold[f->nhold].until = until;
	f->hold[f->nhold].reorder = reorder;
	f->nhold++;
}

/* Release held frames that are due into @out; returns how many. */
static uint32_t
release(struct ib_dev *dev, struct rte_mbuf **out, uint32_t room, int any_sent)
{
	struct ib_fault *f = dev->fault;
	uint64_t now = rte_rdtsc();
	uint32_t i = 0, n = 0;

	while (i < f->nhold && n < room) {
		struct held *h = &f->hold[i];

		if ((h->reorder && any_sent) || now >= h->until) {
			out[n++] = h->m;
			*h = f->hold[--f->nhold];
		} else {
			i++;
		}
	}
	return n;
}

/*
 * RED-style marking: an ECN-capable frame leaving a queue of kmin frames or
 * more becomes CE with a probability rising to pmax at kmax. Marking on
 * departure, as switches built for DCQCN do, tells the receiver about the
 * queue as it is now, not as it was when the frame joined it.
 * The ICRC does not cover the traffic class; the IPv4 checksum does.
 */
static void
ecn_mark(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct ib_fault *f = dev->fault;
	uint8_t *l3 = rte_pktmbuf_mtod(m, uint8_t *) + m->l2_len;
	unsigned int ecn = ip_ecn(l3);

	if (f->kmin == 0 || f->bq_n < f->kmin || ecn == 0 || ecn == IB_ECN_CE)
		return;
	if (f->bq_n < f->kmax &&
	    rnd(f) >= f->pmax * (f->bq_n - f->kmin) / (f->kmax - f->kmin))
		return;
	ip_set_ecn(l3, IB_ECN_CE);
	ib_count(dev, IB_CNT_FAULT_ECN_MARK);
}

/* Into the bottleneck's queue, or dropped at its tail. */
static void
bottleneck_enqueue(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct ib_fault *f = dev->fault;

	if (f->bq_n == f->bq_cap) {
		ib_count(dev, IB_CNT_FAULT_QUEUE_DROP);
		rte_pktmbuf_free(m);
		return;
	}
	f->bq[(f->bq_head + f->bq_n++) % f->bq_cap] = m;
}

/* What the link has sent since the last call (marked, perhaps), into @out. */
static uint32_t
bottleneck_drain(struct ib_dev *dev, struct rte_mbuf **out, uint32_t room)
{
	struct ib_fault *f = dev->fault;
	uint64_t now = rte_rdtsc();
	uint32_t n = 0;

	f->tokens += (now - f->last_tsc) * f->bytes_per_tsc;
	if (f->tokens > FAULT_BURST_BYTES)
		f->tokens = FAULT_BURST_BYTES;
	f->last_tsc = now;
	while (f->bq_n > 0 && n < room) {
		struct rte_mbuf *m = f->bq[f->bq_head];
		uint32_t len = rte_pktmbuf_pkt_len(m);

		if (f->tokens < len)
			break;
		f->tokens -= len;
		out[n++] = m;
		f->bq_head = (f->bq_head + 1) % f->bq_cap;
		f->bq_n--;
		ecn_mark(dev, m);
	}
	return n;
}

/*
 * Apply the faults to the @n frames about to be sent; returns how many are
 * left in @pkts (which has @room slots) to send now.
 */
uint32_t
ib_fault_apply(struct ib_dev *dev, struct rte_mbuf **pkts, uint32_t n,
	       uint32_t room)
{
	struct ib_fault *f = dev->fault;
	struct rte_mbuf *out[IB_TX_PENDING], *raw[IB_TX_PENDING];
	uint32_t i, k = 0, nraw = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct ib_fault_rates *r = rates_for(f, m);

		/* Not RoCE (ARP, ND): never faulted, and past the slow port. */
		if (r == NULL && f->bq != NULL) {
			raw[nraw++] = m;
			continue;
		}
		if (r == NULL || !r->enabled) {
			out[k++] = m;
			continue;
		}
		if (r == &f->dir[0] && f->nak_drop_left > 0 &&
		    bth_qpn((const struct ib_bth *)(rte_pktmbuf_mtod(m,
				const uint8_t *) + bth_off(m))) == f->nak_qpn) {
			f->nak_drop_left--;
			ib_count(dev, IB_CNT_FAULT_DROP);
			rte_pktmbuf_free(m);
			continue;
		}
		if (rnd(f) < r->drop) {
			ib_count(dev, IB_CNT_FAULT_DROP);
			rte_pktmbuf_free(m);
			continue;
		}
		if (rnd(f) < r->corrupt) {
			uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
			uint32_t bit = (uint32_t)(rnd(f) * 8 *
				(rte_pktmbuf_data_len(m) - bth_off(m)));

			p[bth_off(m) + bit / 8] ^= 1u << (bit % 8);
			ib_count(dev, IB_CNT_FAULT_CORRUPT);
		}
		if (rnd(f) < r->dup && k + 1 < room) {
			struct rte_mbuf *c = rte_pktmbuf_copy(m, dev->pool, 0,
							      UINT32_MAX);

			if (c != NULL) {
				out[k++] = c;
				ib_count(dev, IB_CNT_FAULT_DUP);
			}
		}
		if (rnd(f) < r->reorder) {
			/* Behind the next frame; on a link gone quiet, after
			 * a millisecond (else the last frame never leaves).
			 */
			hold(dev, m, rte_rdtsc() + rte_get_tsc_hz() / 1000, 1);
			ib_count(dev, IB_CNT_FAULT_REORDER);
			continue;
		}
		if (rnd(f) < r->delay) {
			hold(dev, m, rte_rdtsc() + rte_get_tsc_hz() / 1000000 *
			     r->delay_us, 0);
			ib_count(dev, IB_CNT_FAULT_DELAY);
			continue;
		}
		out[k++] = m;
	}
	k += release(dev, out + k, room - k, k > 0);
	if (f->bq != NULL) {
		/* Everything RoCE goes through the slow port, in order. */
		for (i = 0; i < k; i++)
			bottleneck_enqueue(dev, out[i]);
		memcpy(out, raw, nraw * sizeof(raw[0]));
		k = nraw + bottleneck_drain(dev, out + nraw, room - nraw);
	}
	memcpy(pkts, out, k * sizeof(out[0]));
	return k;
}

/* Engine: a PSN sequence NAK arrived; lose the resend's first requests. */
void
ib_fault_nak_seq(struct ib_dev *dev, uint32_t dest_qpn)
{
	if (dev->fault != NULL) {
		dev->fault->nak_drop_left = dev->fault->dir[0].nak_drop;
		dev->fault->nak_qpn = dest_qpn;
	}
}

/* Frames still held: the engine keeps polling until they are out. */
int
ib_fault_pending(const struct ib_dev *dev)
{
	return dev->fault != NULL &&
	       (dev->fault->nhold != 0 || dev->fault->bq_n != 0);
}
