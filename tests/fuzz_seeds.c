/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The seed corpus of the receive-path fuzzer (DPIB_FUZZ_SEED_DIR): short
 * conversations with each of the harness's QPs (requests in and out of
 * sequence, responses to what RC_REQ keeps outstanding, UD sends, MADs to
 * QP 1) and the frames of the rxe captures, as input records fuzz_rx.c
 * reads.
 */
#include <glob.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include "ib_hca.h"
#include "pcap.h"
#include "fuzz_rx.h"

/* The harness's keys, for the requests' RETHs and AtomicETHs. */
static struct {
	uint32_t w, ro, mw_ro;
} seed_keys;

struct seed {
	uint8_t b[8192];
	uint32_t n;
};

/* seed_pkt's target for the multicast group: Q_GSI's index with M_MCAST. */
#define T_MCAST		NQP

static void
seed_rec(struct seed *s, uint8_t m, const void *data, uint32_t len)
{
	if (s->n + 3 + len > sizeof(s->b))
		return;
	s->b[s->n++] = m;
	s->b[s->n++] = len >> 8;
	s->b[s->n++] = len;
	if (len)
		memcpy(s->b + s->n, data, len);
	s->n += len;
}

static void
seed_file(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	SETUP(f != NULL, "create %s", path);
	SETUP(fwrite(s->b, 1, s->n, f) == s->n, "write %s", path);
	fclose(f);
}

/* A seed, and the same conversation over IPv6 when its frames are built. */
static void
seed_write(const char *dir, const char *name, const struct seed *s)
{
	static struct seed v6;
	char name6[256];
	uint32_t pos, len;
	int built = 0;

	seed_file(dir, name, s);
	v6 = *s;
	for (pos = 0; pos + 3 <= v6.n; pos += 3 + len) {
		len = (uint32_t)v6.b[pos + 1] << 8 | v6.b[pos + 2];
		if ((v6.b[pos] & 3) != 0 && !(v6.b[pos] & 0x80)) {
			v6.b[pos] |= 0x40;
			built = 1;
		}
	}
	if (!built)
		return;
	snprintf(name6, sizeof(name6), "%s_ip6", name);
	seed_file(dir, name6, &v6);
}

/*
 * Steered record to QP index @qi (or T_MCAST): opcode, headers after the
 * BTH, @paylen payload bytes.
 */
static void
seed_pkt(struct seed *s, int qi, uint8_t opcode, int8_t delta, int ackreq,
	 const void *ext, uint32_t extlen, uint32_t paylen)
{
	uint8_t b[4400];
	uint32_t pad = (-paylen) & 3, i;

	memset(b, 0, sizeof(b));
	b[0] = opcode;
	b[1] = pad << 4;
	b[8] = ackreq ? 0x80 : 0;
	b[11] = (uint8_t)delta;
	if (extlen)
		memcpy(b + IB_BTH_LEN, ext, extlen);
	for (i = 0; i < paylen; i++)
		b[IB_BTH_LEN + extlen + i] = (uint8_t)(i * 31 + opcode);
	seed_rec(s, (uint8_t)(qi == T_MCAST ? 3 | Q_GSI << 2 | M_MCAST :
			      3 | qi << 2), b, IB_BTH_LEN + extlen + paylen + pad);
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	rte_be32_t be = rte_cpu_to_be_32(v);

	memcpy(p, &be, 4);
}

static uint32_t
put_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	reth_set((struct ib_reth *)p, va, rkey, len);
	return IB_RETH_LEN;
}

static uint32_t
put_atmeth(uint8_t *p, uint64_t va, uint32_t rkey, uint64_t swap, uint64_t cmp)
{
	struct ib_atmeth *a = (struct ib_atmeth *)p;

	a->va = rte_cpu_to_be_64(va);
	a->rkey = rte_cpu_to_be_32(rkey);
	a->swap_add = rte_cpu_to_be_64(swap);
	a->compare = rte_cpu_to_be_64(cmp);
	return IB_ATMETH_LEN;
}

static uint32_t
put_aeth(uint8_t *p, uint8_t syndrome)
{
	aeth_set((rte_be32_t *)p, syndrome, 1);
	return IB_AETH_LEN;
}

/* Requests to the responder of QP @qi (RC, UC or SRQ-attached). */
static void
seed_requests(const char *dir, int qi, const char *tag, int uc)
{
	uint8_t base = uc ? 0x20 : 0x00, ext[64];
	uint32_t rk = seed_keys.w, n;
	char name[128];
	struct seed s;

#define SEED(what) do { \
	snprintf(name, sizeof(name), "syn_%s_%s", tag, what); \
	seed_write(dir, name, &s); \
} while (0)
	s.n = 0;
	seed_pkt(&s, qi, base | IB_RC_SEND_ONLY, 0, 1, NULL, 0, 64);
	SEED("send_only");
	s.n = 0;
	seed_pkt(&s, qi, base | IB_RC_SEND_FIRST, 0, 0, NULL, 0, 1024);
	seed_pkt(&s, qi, base | IB_RC_SEND_MIDDLE, 0, 0, NULL, 0, 1024);
	seed_pkt(&s, qi, base | IB_RC_SEND_LAST_IMM, 0, 1, "\0\0\x12\x34", 4,
		 952);
	SEED("send_fml");
	s.n = 0;
	n = put_reth(ext, W_IOVA + 0x100, rk, 64);
	seed_pkt(&s, qi, base | IB_RC_WRITE_ONLY, 0, 1, ext, n, 64);
	SEED("write_only");
	s.n = 0;
	n = put_reth(ext, W_IOVA + 0x1000, rk, 3000);
	seed_pkt(&s, qi, base | IB_RC_WRITE_FIRST, 0, 0, ext, n, 1024);
	seed_pkt(&s, qi, base | IB_RC_WRITE_MIDDLE, 0, 0, NULL, 0, 1024);
	seed_pkt(&s, qi, base | IB_RC_WRITE_LAST_IMM, 0, 1, "\0\0\x56\x78", 4,
		 952);
	SEED("write_fml_imm");
	s.n = 0;
	n = put_reth(ext, W_IOVA + 0x2000, rk, 16);
	memcpy(ext + n, "\0\0\x9a\xbc", 4);
	seed_pkt(&s, qi, base | IB_RC_WRITE_ONLY_IMM, 0, 1, ext, n + 4, 16);
	SEED("write_only_imm");
	if (uc)
		return;
	s.n = 0;
	n = put_reth(ext, W_IOVA + 0x3000, rk, 2048);
	seed_pkt(&s, qi, IB_RC_READ_REQUEST, 0, 1, ext, n, 0);
	n = put_reth(ext, RO_IOVA + 0x40, seed_keys.ro, 100);
	seed_pkt(&s, qi, IB_RC_READ_REQUEST, 0, 1, ext, n, 0);
	SEED("read");
	s.n = 0;
	n = put_atmeth(ext, W_IOVA + 0x4000, rk, 5, W_BYTE(0));
	seed_pkt(&s, qi, IB_RC_COMPARE_SWAP, 0, 1, ext, n, 0);
	n = put_atmeth(ext, W_IOVA + 0x4008, rk, 7, 0);
	seed_pkt(&s, qi, IB_RC_FETCH_ADD, 0, 1, ext, n, 0);
	seed_pkt(&s, qi, IB_RC_FETCH_ADD, -1, 1, ext, n, 0);	/* duplicate */
	SEED("atomics");
	/* IBA 1.5 ATOMIC WRITE: aligned, its duplicate, misaligned. */
	s.n = 0;
	n = put_reth(ext, W_IOVA + 0x4010, rk, 8);
	seed_pkt(&s, qi, IB_RC_ATOMIC_WRITE, 0, 1, ext, n, 8);
	seed_pkt(&s, qi, IB_RC_ATOMIC_WRITE, -1, 1, ext, n, 8);
	n = put_reth(ext, W_IOVA + 0x4014, rk, 8);
	seed_pkt(&s, qi, IB_RC_ATOMIC_WRITE, 0, 1, ext, n, 8);
	SEED("atomic_write");
	/* The window over MR_RO: READ inside, then a WRITE through it. */
	s.n = 0;
	n = put_reth(ext, RO_IOVA + PAGE + 0x80, seed_keys.mw_ro, 512);
	seed_pkt(&s, qi, IB_RC_READ_REQUEST, 0, 1, ext, n, 0);
	n = put_reth(ext, RO_IOVA + PAGE + 0x80, seed_keys.mw_ro, 64);
	seed_pkt(&s, qi, IB_RC_WRITE_ONLY, 0, 1, ext, n, 64);
	SEED("window");
	/* SEND with Invalidate of the (type 1) window and of an MR key. */
	s.n = 0;
	put_be32(ext, seed_keys.mw_ro);
	seed_pkt(&s, qi, IB_RC_SEND_ONLY_INV, 0, 1, ext, 4, 32);
	SEED("send_inv_window");
	s.n = 0;
	seed_pkt(&s, qi, IB_RC_SEND_FIRST, 0, 0, NULL, 0, 1024);
	put_be32(ext, rk);
	seed_pkt(&s, qi, IB_RC_SEND_LAST_INV, 0, 1, ext, 4, 100);
	SEED("send_inv_mr");
	s.n = 0;
	seed_rec(&s, (uint8_t)(0x80 | qi << 2), NULL, 0);	/* recycle */
	seed_pkt(&s, qi, IB_RC_SEND_ONLY, 0, 1, NULL, 0, 8);
	SEED("recycle_send");
	s.n = 0;
	seed_pkt(&s, qi, IB_RC_SEND_ONLY, 0, 1, NULL, 0, 8);
	seed_pkt(&s, qi, IB_RC_SEND_ONLY, -1, 1, NULL, 0, 8);	/* duplicate */
	seed_pkt(&s, qi, IB_RC_SEND_ONLY, 3, 1, NULL, 0, 8);	/* too early */
	SEED("dup_seq");
#undef SEED
}

/* Responses to RC_REQ's outstanding sends, in order, and NAKs. */
static void
seed_responses(const char *dir)
{
	static const uint8_t naks[] = { AETH_RNR_NAK | 1, AETH_NAK_PSN_SEQ,
		AETH_NAK_INVALID, AETH_NAK_REM_ACCESS, AETH_NAK_REM_OP };
	uint8_t ext[32];
	char name[64];
	struct seed s;
	uint32_t n, i;

	s.n = 0;
	n = put_aeth(ext, AETH_ACK | AETH_CREDIT_INVALID);
	seed_pkt(&s, Q_RC_REQ, IB_RC_ACKNOWLEDGE, 0, 0, ext, n, 0);
	seed_pkt(&s, Q_RC_REQ, IB_RC_ACKNOWLEDGE, 0, 0, ext, n, 0);
	seed_pkt(&s, Q_RC_REQ, IB_RC_READ_RESPONSE_FIRST, 0, 0, ext, n, 1024);
	seed_pkt(&s, Q_RC_REQ, IB_RC_READ_RESPONSE_LAST, 0, 0, ext, n, 1024);
	memset(ext + n, 0, 8);
	ext[n + 7] = 9;
	seed_pkt(&s, Q_RC_REQ, IB_RC_ATOMIC_ACKNOWLEDGE, 0, 0, ext, n + 8, 0);
	seed_pkt(&s, Q_RC_REQ, IB_RC_ATOMIC_ACKNOWLEDGE, 0, 0, ext, n + 8, 0);
	seed_pkt(&s, Q_RC_REQ, IB_RC_ACKNOWLEDGE, 2, 0, ext, n, 0);
	seed_pkt(&s, Q_RC_REQ, IB_RC_ACKNOWLEDGE, 0, 0, ext, n, 0);
	seed_write(dir, "syn_req_all_acked", &s);
	s.n = 0;
	seed_pkt(&s, Q_RC_REQ, IB_RC_ACKNOWLEDGE, 1, 0, ext, n, 0);
	seed_pkt(&s, Q_RC_REQ, IB_RC_READ_RESPONSE_ONLY, 0, 0, ext, n, 2048);
	seed_write(dir, "syn_req_read_only", &s);
	for (i = 0; i < RTE_DIM(naks); i++) {
		s.n = 0;
		put_aeth(ext, naks[i]);
		seed_pkt(&s, Q_RC_REQ, IB_RC_ACKNOWLEDGE, 1, 0, ext, n, 0);
		snprintf(name, sizeof(name), "syn_req_nak_%02x", naks[i]);
		seed_write(dir, name, &s);
	}
}

static void
seed_ud(const char *dir)
{
	struct ib_deth d = { .qkey = rte_cpu_to_be_32(QKEY),
			     .sqp = rte_cpu_to_be_32(0x77) };
	uint8_t ext[16];
	struct seed s;

	s.n = 0;
	seed_pkt(&s, Q_UD, IB_UD_SEND_ONLY, 0, 0, &d, sizeof(d), 256);
	seed_write(dir, "syn_ud_send", &s);
	s.n = 0;
	memcpy(ext, &d, sizeof(d));
	memcpy(ext + sizeof(d), "\x11\x22\x33\x44", 4);
	seed_pkt(&s, T_MCAST, IB_UD_SEND_ONLY_IMM, 0, 0, ext, sizeof(d) + 4,
		 100);
	seed_write(dir, "syn_ud_mcast_imm", &s);
}

/*
 * A CM REQ as dpib's librdmacm sends one (IBA 12.6.5, Table 99): the MAD
 * header (base version 1, class CM, class version 2, method Send, attribute
 * REQ), then an RC connection to QP 0x1234 from PSN 0x4567 for the RDMA-CM
 * TCP port space, port 7471.
 */
static void
cm_req_mad(uint8_t *mad)
{
	static const uint8_t hdr[24] = { 1, MAD_CLASS_CM, 2, 3,
		[8] = 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, [16] = 0x00, 0x10 };
	uint8_t *d = mad + sizeof(hdr);

	memset(mad, 0, MAD_LEN);
	memcpy(mad, hdr, sizeof(hdr));
	put_be32(d + 0, 0x0badcafe);			/* local comm ID */
	put_be32(d + 8, 0x00000000);			/* service ID */
	put_be32(d + 12, 0x01060000 | 7471);
	put_be32(d + 16, 0x020000ff);			/* local CA GUID */
	put_be32(d + 20, 0xfe000001);
	put_be32(d + 28, 0);				/* local Q_Key */
	put_be32(d + 32, 0x1234u << 8 | 4);		/* QPN, resp. res. */
	put_be32(d + 36, 4);				/* initiator depth */
	put_be32(d + 40, 16u << 3);			/* timeout; RC: 0 */
	put_be32(d + 44, 0x4567u << 8 | 16u << 3 | 7);	/* PSN, retries */
	put_be32(d + 48, 0xffffu << 16 | 3u << 12 | 7u << 8 | 15u << 4);
}

/*
 * MADs to QP 1: a CM REQ (a receive completes), the same cut short, a
 * whole MAD of another class (Performance Management, 0x04) and the REQ
 * with the UD QP's Q_Key instead of the GSI's: the last three complete
 * nothing. Then a REQ to the UD QP, which takes it as any datagram.
 */
static void
seed_gsi(const char *dir)
{
	struct ib_deth d = { .qkey = rte_cpu_to_be_32(GSI_QKEY),
			     .sqp = rte_cpu_to_be_32(1) };
	uint8_t ext[sizeof(d) + MAD_LEN];
	struct seed s;

	memcpy(ext, &d, sizeof(d));
	cm_req_mad(ext + sizeof(d));
	s.n = 0;
	seed_pkt(&s, Q_GSI, IB_UD_SEND_ONLY, 0, 0, ext, sizeof(ext), 0);
	seed_write(dir, "syn_gsi_cm_req", &s);
	s.n = 0;
	seed_pkt(&s, Q_GSI, IB_UD_SEND_ONLY, 0, 0, ext, sizeof(d) + 128, 0);
	seed_write(dir, "syn_gsi_cm_req_truncated", &s);
	s.n = 0;
	ext[sizeof(d) + 1] = 0x04;
	seed_pkt(&s, Q_GSI, IB_UD_SEND_ONLY, 0, 0, ext, sizeof(ext), 0);
	seed_write(dir, "syn_gsi_class_04", &s);
	s.n = 0;
	ext[sizeof(d) + 1] = MAD_CLASS_CM;
	put_be32(ext, QKEY);
	seed_pkt(&s, Q_GSI, IB_UD_SEND_ONLY, 0, 0, ext, sizeof(ext), 0);
	seed_write(dir, "syn_gsi_bad_qkey", &s);
	s.n = 0;
	seed_pkt(&s, Q_UD, IB_UD_SEND_ONLY, 0, 0, ext, sizeof(ext), 0);
	seed_write(dir, "syn_ud_cm_req", &s);
}

/*
 * The rxe captures: each frame as it is (raw), and its transport part
 * steered to the QP of its kind with the PSN expected there, one seed per
 * frame and one per capture.
 */
static void
seed_pcaps(const char *dir)
{
	const char *shared = getenv("DPIB_SHARED");
	char pattern[4096], name[256];
	struct pcap_file pf;
	struct seed all, one;
	const uint8_t *d;
	uint32_t len;
	glob_t g;
	size_t i;
	int k;

	if (shared == NULL || *shared == '\0')
		return;
	snprintf(pattern, sizeof(pattern), "%s/vectors/rxe/*.pcap", shared);
	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (i = 0; i < g.gl_pathc; i++) {
		const char *base = strrchr(g.gl_pathv[i], '/') + 1;

		if (pcap_open(&pf, g.gl_pathv[i]) != 0)
			continue;
		all.n = 0;
		for (k = 0; pcap_next(&pf, &d, &len) == 1; k++) {
			uint32_t mask;
			int qi;

			one.n = 0;
			seed_rec(&one, 0, d, len);
			snprintf(name, sizeof(name), "pcap_%.*s_%03d_raw",
				 (int)(strlen(base) - 5), base, k);
			seed_write(dir, name, &one);
			if (len < BTH_OFF + IB_BTH_LEN + IB_ICRC_LEN ||
			    d[12] != 0x08 || d[13] != 0x00)
				continue;
			mask = ib_opcode[d[BTH_OFF]].mask;
			qi = (mask & IB_M_RESP) ? Q_RC_REQ :
			     (mask & IB_M_UC) ? Q_UC : (mask & IB_M_UD) ? Q_UD :
			     Q_RC_A;
			one.n = 0;
			{
				uint8_t b[FRAME_MAX];
				uint32_t n = len - BTH_OFF - IB_ICRC_LEN;

				memcpy(b, d + BTH_OFF, n);
				b[11] = 0;	/* delta 0: in sequence */
				seed_rec(&one, (uint8_t)(3 | qi << 2), b, n);
				if (k < MAX_RECORDS)
					seed_rec(&all, (uint8_t)(3 | qi << 2),
						 b, n);
			}
			snprintf(name, sizeof(name), "pcap_%.*s_%03d_steered",
				 (int)(strlen(base) - 5), base, k);
			seed_write(dir, name, &one);
		}
		snprintf(name, sizeof(name), "pcap_%.*s_all",
			 (int)(strlen(base) - 5), base);
		if (all.n)
			seed_write(dir, name, &all);
		pcap_close(&pf);
	}
	globfree(&g);
}

void
fuzz_seeds_write(const char *dir, uint32_t w_rkey, uint32_t ro_rkey,
		 uint32_t mw_ro_rkey)
{
	seed_keys.w = w_rkey;
	seed_keys.ro = ro_rkey;
	seed_keys.mw_ro = mw_ro_rkey;
	seed_requests(dir, Q_RC_A, "rc", 0);
	seed_requests(dir, Q_RC_SRQ, "srq", 0);
	seed_requests(dir, Q_RC_RTR, "rtr", 0);
	seed_requests(dir, Q_UC, "uc", 1);
	seed_responses(dir);
	seed_ud(dir);
	seed_gsi(dir);
	seed_pcaps(dir);
}
