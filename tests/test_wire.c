/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Wire format against independent evidence: frames captured from Linux
 * soft-RoCE (shared/vectors/rxe) for the ICRC and the opcode table, the IBA
 * header tables for offsets and lengths, the ibv_post_send(3) table for the
 * work-request opcodes each QP type allows.
 */
#include <inttypes.h>
#include <limits.h>

#include "check.h"
#include "pcap.h"
#include "ib_hca.h"

#define ETH_HLEN	14
#define IPV4_HLEN	20
#define UDP_HLEN	8
#define ROCE_HLEN	(IPV4_HLEN + UDP_HLEN)
#define PATH_MTU	1024	/* every capture ran with path MTU 1024 */

/* The frames each capture holds, all with a valid ICRC but one (README). */
static const struct {
	const char *name;
	unsigned int frames;
} vectors[] = {
	{ "host_smoke.pcap", 9 },
	{ "probe_imm.pcap", 16 },
	{ "probe_inv.pcap", 6 },
	{ "probe_psn_nak.pcap", 74 },
	{ "probe_rkey_nak.pcap", 2 },
	{ "probe_rnr_nak.pcap", 10 },
	{ "rc_atomic.pcap", 20 },
	{ "rc_read.pcap", 30 },
	{ "rc_send.pcap", 16 },
	{ "rc_write.pcap", 30 },
	{ "rdma_cm.pcap", 29 },
	{ "uc.pcap", 21 },
	{ "ud.pcap", 4 },
};
#define NVEC RTE_DIM(vectors)
#define CORRUPT_FILE "host_smoke.pcap"

struct roce_frame {
	const char *file;
	unsigned int index;		/* record number in the file */
	uint32_t caplen;
	const uint8_t *ip;		/* IPv4 header */
	uint32_t iplen;			/* IPv4 total length */
	const struct ib_bth *bth;
	uint32_t wire_icrc;
};

static struct pcap_file files[NVEC];

static void
load_vectors(void)
{
	const char *dir = getenv("DPIB_SHARED");
	char path[4096];
	unsigned int i;
	int ret;

	CHECK(dir != NULL, "DPIB_SHARED is not set (meson test sets it)");
	for (i = 0; i < NVEC; i++) {
		snprintf(path, sizeof(path), "%s/vectors/rxe/%s", dir,
			 vectors[i].name);
		ret = pcap_open(&files[i], path);
		CHECK(ret == 0, "%s: %s", path, strerror(-ret));
		CHECK(files[i].linktype == PCAP_LINKTYPE_ETHERNET,
		      "%s: linktype %u", path, files[i].linktype);
	}
}

static uint16_t
be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Ethernet / IPv4 without options / UDP to 4791. The end of the packet comes
 * from the IPv4 total length, not the capture length: a virtual link may
 * pad a frame or, below 60 bytes, not pad it at all.
 */
static int
roce_parse(const uint8_t *data, uint32_t caplen, struct roce_frame *fr)
{
	const uint8_t *ip = data + ETH_HLEN;
	uint32_t iplen;

	if (caplen < ETH_HLEN + ROCE_HLEN || be16_at(data + 12) != 0x0800)
		return 0;
	if (ip[0] != 0x45 || ip[9] != 17 || be16_at(ip + 22) != IB_UDP_PORT)
		return 0;
	iplen = be16_at(ip + 2);
	if (iplen < ROCE_HLEN + IB_BTH_LEN + IB_ICRC_LEN ||
	    iplen > caplen - ETH_HLEN ||
	    be16_at(ip + IPV4_HLEN + 4) != iplen - IPV4_HLEN)
		return 0;
	fr->caplen = caplen;
	fr->ip = ip;
	fr->iplen = iplen;
	fr->bth = (const struct ib_bth *)(ip + ROCE_HLEN);
	/* A17.3.3: the ICRC goes on the wire least significant byte first. */
	fr->wire_icrc = (uint32_t)ip[iplen - 4] | (uint32_t)ip[iplen - 3] << 8 |
			(uint32_t)ip[iplen - 2] << 16 |
			(uint32_t)ip[iplen - 1] << 24;
	return 1;
}

typedef void (*frame_fn)(unsigned int file, const struct roce_frame *fr,
			 void *arg);

/* Every record of every capture must be a RoCEv2 frame (README). */
static void
for_each_frame(frame_fn fn, void *arg)
{
	struct roce_frame fr;
	const uint8_t *data;
	uint32_t caplen;
	unsigned int i, n;
	int ret;

	for (i = 0; i < NVEC; i++) {
		files[i].pos = PCAP_GLOBAL_HDR_LEN;
		for (n = 0; (ret = pcap_next(&files[i], &data, &caplen)) == 1;
		     n++) {
			CHECK(roce_parse(data, caplen, &fr), "%s #%u: not RoCEv2",
			      vectors[i].name, n);
			fr.file = vectors[i].name;
			fr.index = n;
			fn(i, &fr, arg);
		}
		CHECK(ret == 0, "%s: record %u is truncated", vectors[i].name,
		      n);
		CHECK(n > 0, "%s holds no RoCEv2 frame", vectors[i].name);
	}
}

static uint32_t
frame_icrc(const struct roce_frame *fr)
{
	return ib_icrc(fr->ip, fr->iplen - IB_ICRC_LEN);
}

struct icrc_tally {
	unsigned int match[NVEC], mismatch[NVEC];
	unsigned int short_frames;
	const char *bad_file;
	unsigned int bad_index;
	uint8_t bad_opcode;
};

static void
tally_icrc(unsigned int file, const struct roce_frame *fr, void *arg)
{
	struct icrc_tally *t = arg;

	if (fr->caplen < 60)
		t->short_frames++;
	if (frame_icrc(fr) == fr->wire_icrc) {
		t->match[file]++;
		return;
	}
	t->mismatch[file]++;
	t->bad_file = fr->file;
	t->bad_index = fr->index;
	t->bad_opcode = bth_opcode(fr->bth);
}

/*
 * The data path hashes the packet in place with its variant fields set to
 * ones for a moment: same result as ib_icrc, and the packet as it was.
 */
static void
check_inplace(unsigned int file, const struct roce_frame *fr, void *arg)
{
	uint8_t pkt[2048];
	uint32_t end = fr->iplen - IB_ICRC_LEN;

	CHECK(fr->iplen <= sizeof(pkt), "%s #%u too long", fr->file, fr->index);
	memcpy(pkt, fr->ip, fr->iplen);
	CHECK(ib_icrc_inplace(pkt, end) == frame_icrc(fr),
	      "%s #%u: in-place ICRC differs", fr->file, fr->index);
	CHECK(memcmp(pkt, fr->ip, fr->iplen) == 0,
	      "%s #%u: packet not restored", fr->file, fr->index);
	(*(unsigned int *)arg)++;
}

static void
icrc_inplace_matches_icrc(void)
{
	unsigned int n = 0;

	for_each_frame(check_inplace, &n);
	printf("  %u frames\n", n);
}

/*
 * The rounds of the data path (ib_icrc_many on receive, ib_icrc_seal on
 * send) give every frame of the vectors the ICRC ib_icrc gives it, rounds
 * of up to 16 and a partial one, and leave each packet as it was.
 */
#define ROUND_MAX	40

struct rounds {
	uint8_t pkt[ROUND_MAX][2048];
	uint8_t orig[ROUND_MAX][2048];
	uint32_t len[ROUND_MAX];
	uint32_t want[ROUND_MAX];
	unsigned int n, frames;
	uint8_t room[ROUND_MAX][2048 + 32];
	struct rte_mbuf mb[ROUND_MAX];	/* over room[]: what sealing reads */
};

static void
rounds_check(struct rounds *r)
{
	uint8_t *ip[ROUND_MAX];
	uint32_t got[ROUND_MAX], icrc;
	struct rte_mbuf *m[ROUND_MAX];
	unsigned int i;

	for (i = 0; i < r->n; i++)
		ip[i] = r->pkt[i];
	ib_icrc_many(ip, r->len, got, r->n);
	for (i = 0; i < r->n; i++) {
		CHECK(got[i] == r->want[i], "frame %u of a round of %u: "
		      "ICRC %#x, want %#x", i, r->n, got[i], r->want[i]);
		CHECK(memcmp(r->pkt[i], r->orig[i], r->len[i]) == 0,
		      "frame %u of a round of %u not restored", i, r->n);
	}
	/* Sealing: the same frames behind a 14-byte Ethernet header. */
	for (i = 0; i < r->n; i++) {
		uint8_t *d = r->room[i];

		m[i] = &r->mb[i];
		memset(m[i], 0, sizeof(*m[i]));
		m[i]->buf_addr = d;
		m[i]->buf_len = sizeof(r->room[i]);
		m[i]->nb_segs = 1;
		m[i]->data_len = (uint16_t)(14 + r->len[i] + 4);
		m[i]->pkt_len = m[i]->data_len;
		memset(d, 0x5a, 14);
		memcpy(d + 14, r->orig[i], r->len[i]);
		memset(d + 14 + r->len[i], 0, 4);
		m[i]->l2_len = 14;
	}
	ib_icrc_seal(m, r->n);
	for (i = 0; i < r->n; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(m[i], const uint8_t *);

		memcpy(&icrc, d + 14 + r->len[i], 4);
		CHECK(rte_le_to_cpu_32(icrc) == r->want[i],
		      "sealed frame %u of %u: ICRC %#x, want %#x", i, r->n,
		      rte_le_to_cpu_32(icrc), r->want[i]);
		CHECK(memcmp(d + 14, r->orig[i], r->len[i]) == 0,
		      "sealed frame %u of %u changed", i, r->n);
	}
	r->frames += r->n;
	r->n = 0;
}

static void
rounds_add(unsigned int file, const struct roce_frame *fr, void *arg)
{
	struct rounds *r = arg;
	uint32_t end = fr->iplen - IB_ICRC_LEN;

	RTE_SET_USED(file);
	if (fr->iplen > sizeof(r->pkt[0]) - 4)
		return;
	memcpy(r->pkt[r->n], fr->ip, end);
	memcpy(r->orig[r->n], fr->ip, end);
	r->len[r->n] = end;
	r->want[r->n] = frame_icrc(fr);
	/* Rounds of 1, 2, ... ROUND_MAX frames, over and over. */
	if (++r->n == 1 + r->frames % ROUND_MAX)
		rounds_check(r);
}

static void
icrc_rounds_match_icrc(void)
{
	static struct rounds r;

	for_each_frame(rounds_add, &r);
	if (r.n != 0)
		rounds_check(&r);
	CHECK(r.frames > 100, "only %u frames", r.frames);
	printf("  %u frames in rounds of 1 .. %u\n", r.frames, ROUND_MAX);
}

/* A17.3.3: ib_icrc agrees with the ICRC Linux rxe put on every frame. */
static void
icrc_matches_rxe_vectors(void)
{
	struct icrc_tally t;
	unsigned int i, bad = 0;

	memset(&t, 0, sizeof(t));
	for_each_frame(tally_icrc, &t);
	for (i = 0; i < NVEC; i++) {
		int corrupt = strcmp(vectors[i].name, CORRUPT_FILE) == 0;

		printf("  %-20s %3u frames, %3u ICRC match, %u mismatch\n",
		       vectors[i].name, t.match[i] + t.mismatch[i], t.match[i],
		       t.mismatch[i]);
		CHECK(t.match[i] + t.mismatch[i] == vectors[i].frames,
		      "%s: %u frames, want %u", vectors[i].name,
		      t.match[i] + t.mismatch[i], vectors[i].frames);
		CHECK(t.match[i] == vectors[i].frames - corrupt,
		      "%s: %u of %u frames match", vectors[i].name, t.match[i],
		      vectors[i].frames);
		bad += t.mismatch[i];
	}
	CHECK(bad == 1, "%u mismatches, want exactly the corrupted frame", bad);
	CHECK(strcmp(t.bad_file, CORRUPT_FILE) == 0, "mismatch in %s #%u",
	      t.bad_file, t.bad_index);
	/* The README says the corrupted frame is a WRITE. */
	CHECK(t.bad_opcode == IB_RC_WRITE_ONLY, "corrupted frame %s #%u is %s",
	      t.bad_file, t.bad_index, ib_opcode[t.bad_opcode].name);
	printf("  corrupted: %s #%u (%s)\n", t.bad_file, t.bad_index,
	       ib_opcode[t.bad_opcode].name);
	CHECK(t.short_frames > 0, "no frame under 60 bytes was exercised");
}

struct opcode_tally {
	unsigned int seen[256];
	unsigned int syndrome[256];
};

static void
check_aeth(const struct roce_frame *fr, const struct ib_opcode_info *info,
	   struct opcode_tally *t)
{
	const uint8_t *bth = (const uint8_t *)fr->bth;
	rte_be32_t aeth;
	uint8_t syn;

	memcpy(&aeth, bth + info->offset[IB_HDR_AETH], sizeof(aeth));
	syn = aeth_syndrome(&aeth);
	t->syndrome[syn]++;
	/* IBA 9.7.5.2, table 41: bit 7 reserved, 0x40 class reserved. */
	switch (syn & AETH_TYPE_MASK) {
	case AETH_ACK:
	case AETH_RNR_NAK:
		break;
	case AETH_NAK:
		CHECK(syn >= AETH_NAK_PSN_SEQ && syn <= AETH_NAK_INV_RD,
		      "%s #%u: reserved NAK code %#x", fr->file, fr->index,
		      syn);
		break;
	default:
		CHECK(0, "%s #%u: syndrome %#x decodes to no class", fr->file,
		      fr->index, syn);
	}
	/* Data-carrying responses are positive; a NAK travels alone. */
	if (info->mask & (IB_M_READ | IB_M_ATOMIC))
		CHECK((syn & AETH_TYPE_MASK) == AETH_ACK,
		      "%s #%u: %s with syndrome %#x", fr->file, fr->index,
		      info->name, syn);
}

static void
check_reth(const struct roce_frame *fr, const struct ib_opcode_info *info,
	   uint32_t paylen)
{
	struct ib_reth reth;
	uint32_t dmalen;

	memcpy(&reth, (const uint8_t *)fr->bth + info->offset[IB_HDR_RETH],
	       sizeof(reth));
	dmalen = reth_len(&reth);
	/* IBA 9.4.3: a message is at most 2^31 bytes. */
	CHECK(dmalen <= 1u << 31, "%s #%u: DMA length %u", fr->file,
	      fr->index, dmalen);
	if ((info->mask & IB_M_WRITE) && (info->mask & IB_M_ONLY) == IB_M_ONLY)
		CHECK(dmalen == paylen, "%s #%u: %s DMA length %u, payload %u",
		      fr->file, fr->index, info->name, dmalen, paylen);
	if ((info->mask & IB_M_WRITE) && (info->mask & IB_M_ONLY) == IB_M_FIRST)
		CHECK(dmalen > paylen, "%s #%u: %s DMA length %u, payload %u",
		      fr->file, fr->index, info->name, dmalen, paylen);
}

static void
check_opcode(unsigned int file, const struct roce_frame *fr, void *arg)
{
	struct opcode_tally *t = arg;
	const struct ib_opcode_info *info;
	uint32_t need, paylen, pad, pos;

	info = &ib_opcode[bth_opcode(fr->bth)];
	t->seen[bth_opcode(fr->bth)]++;
	CHECK(info->mask != 0, "%s #%u: opcode %#x not in the table",
	      fr->file, fr->index, bth_opcode(fr->bth));
	CHECK(bth_tver(fr->bth) == 0 && bth_pkey(fr->bth) == IB_DEFAULT_PKEY,
	      "%s #%u: TVer %u P_Key %#x", fr->file, fr->index,
	      bth_tver(fr->bth), bth_pkey(fr->bth));

	pad = bth_pad(fr->bth);
	need = ROCE_HLEN + info->length + pad + IB_ICRC_LEN;
	CHECK(fr->iplen >= need, "%s #%u: %s is %u bytes, headers need %u",
	      fr->file, fr->index, info->name, fr->iplen, need);
	paylen = fr->iplen - need;
	/* IBA 9.2: payload plus pad fills whole 4-byte words. */
	CHECK((paylen + pad) % 4 == 0, "%s #%u: payload %u pad %u", fr->file,
	      fr->index, paylen, pad);
	/* Without a payload the table's length must be the exact size. */
	if (!(info->mask & IB_M_PAYLOAD))
		CHECK(paylen == 0 && pad == 0, "%s #%u: %s with %u extra bytes",
		      fr->file, fr->index, info->name, paylen + pad);
	/* Every packet but the last of a message fills the path MTU. */
	pos = info->mask & (IB_M_FIRST | IB_M_MIDDLE | IB_M_LAST);
	if ((info->mask & IB_M_PAYLOAD) &&
	    (pos == IB_M_FIRST || pos == IB_M_MIDDLE))
		CHECK(paylen == PATH_MTU, "%s #%u: %s payload %u", fr->file,
		      fr->index, info->name, paylen);
	/* The captures' AckReq pattern: only an RC request's last packet. */
	if ((info->mask & IB_M_RC) && (info->mask & IB_M_REQ))
		CHECK(bth_ackreq(fr->bth) == !!(info->mask & IB_M_LAST),
		      "%s #%u: %s AckReq %d", fr->file, fr->index, info->name,
		      bth_ackreq(fr->bth));

	if (info->mask & IB_M_RETH)
		check_reth(fr, info, paylen);
	if (info->mask & IB_M_AETH)
		check_aeth(fr, info, t);
	if (info->mask & IB_M_ATMETH) {
		struct ib_atmeth a;

		memcpy(&a, (const uint8_t *)fr->bth +
		       info->offset[IB_HDR_ATMETH], sizeof(a));
		/* Atomics address naturally aligned 64-bit words. */
		CHECK((rte_be_to_cpu_64(a.va) & 7) == 0, "%s #%u: VA %#" PRIx64,
		      fr->file, fr->index, rte_be_to_cpu_64(a.va));
	}
	if (info->mask & IB_M_DETH) {
		struct ib_deth d;

		memcpy(&d, (const uint8_t *)fr->bth + info->offset[IB_HDR_DETH],
		       sizeof(d));
		/* IBA 9.3.3: the source QP is 24 bits under a reserved byte. */
		CHECK((rte_be_to_cpu_32(d.sqp) >> 24) == 0,
		      "%s #%u: DETH %#x", fr->file, fr->index,
		      rte_be_to_cpu_32(d.sqp));
	}
}

/* Opcodes the captures are documented to contain (README). */
static const uint8_t required_opcodes[] = {
	IB_RC_SEND_FIRST, IB_RC_SEND_MIDDLE, IB_RC_SEND_LAST,
	IB_RC_SEND_LAST_IMM, IB_RC_SEND_ONLY, IB_RC_SEND_ONLY_IMM,
	IB_RC_WRITE_FIRST, IB_RC_WRITE_MIDDLE, IB_RC_WRITE_LAST,
	IB_RC_WRITE_LAST_IMM, IB_RC_WRITE_ONLY, IB_RC_WRITE_ONLY_IMM,
	IB_RC_READ_REQUEST, IB_RC_READ_RESPONSE_FIRST,
	IB_RC_READ_RESPONSE_MIDDLE, IB_RC_READ_RESPONSE_LAST,
	IB_RC_READ_RESPONSE_ONLY, IB_RC_ACKNOWLEDGE, IB_RC_ATOMIC_ACKNOWLEDGE,
	IB_RC_COMPARE_SWAP, IB_RC_FETCH_ADD, IB_RC_SEND_ONLY_INV,
	IB_UC_SEND_FIRST, IB_UC_SEND_MIDDLE, IB_UC_SEND_LAST,
	IB_UC_WRITE_FIRST, IB_UC_WRITE_MIDDLE, IB_UC_WRITE_LAST,
	IB_UD_SEND_ONLY,
};

/* Syndromes the probes are documented to provoke (README). */
static const uint8_t required_syndromes[] = {
	AETH_ACK | AETH_CREDIT_INVALID,	/* rxe advertises no credits */
	AETH_RNR_NAK | 24,		/* RNR NAK, timer 24 */
	AETH_NAK_PSN_SEQ,
	AETH_NAK_REM_ACCESS,
};

/* IBA 9.2/9.3: the table knows every opcode on the wire and its size. */
static void
opcode_table_parses_vectors(void)
{
	struct opcode_tally t;
	unsigned int op, i;

	memset(&t, 0, sizeof(t));
	for_each_frame(check_opcode, &t);
	for (op = 0; op < 256; op++)
		if (t.seen[op] != 0)
			printf("  0x%02x %-34s %3u\n", op, ib_opcode[op].name,
			       t.seen[op]);
	for (op = 0; op < 256; op++)
		if (t.syndrome[op] != 0)
			printf("  AETH syndrome 0x%02x %3u\n", op, t.syndrome[op]);
	for (i = 0; i < RTE_DIM(required_opcodes); i++)
		CHECK(t.seen[required_opcodes[i]] > 0, "no %s frame in vectors",
		      ib_opcode[required_opcodes[i]].name);
	for (i = 0; i < RTE_DIM(required_syndromes); i++)
		CHECK(t.syndrome[required_syndromes[i]] > 0,
		      "no AETH syndrome %#x in vectors", required_syndromes[i]);
}

/*
 * Header sizes of IBA table 38 (BTH plus extension headers, payload
 * excluded), written out by hand rather than derived from the masks, and
 * the RoCEv2 CNP of A17.9.3 (BTH plus 16 reserved bytes), and IBA 1.5's
 * RC ATOMIC WRITE (BTH + RETH, 8 payload bytes).
 */
static const uint8_t iba_length[256] = {
	[IB_RC_SEND_FIRST] = 12, [IB_RC_SEND_MIDDLE] = 12,
	[IB_RC_SEND_LAST] = 12, [IB_RC_SEND_LAST_IMM] = 16,
	[IB_RC_SEND_ONLY] = 12, [IB_RC_SEND_ONLY_IMM] = 16,
	[IB_RC_WRITE_FIRST] = 28, [IB_RC_WRITE_MIDDLE] = 12,
	[IB_RC_WRITE_LAST] = 12, [IB_RC_WRITE_LAST_IMM] = 16,
	[IB_RC_WRITE_ONLY] = 28, [IB_RC_WRITE_ONLY_IMM] = 32,
	[IB_RC_READ_REQUEST] = 28, [IB_RC_READ_RESPONSE_FIRST] = 16,
	[IB_RC_READ_RESPONSE_MIDDLE] = 12, [IB_RC_READ_RESPONSE_LAST] = 16,
	[IB_RC_READ_RESPONSE_ONLY] = 16, [IB_RC_ACKNOWLEDGE] = 16,
	[IB_RC_ATOMIC_ACKNOWLEDGE] = 24, [IB_RC_COMPARE_SWAP] = 40,
	[IB_RC_FETCH_ADD] = 40, [IB_RC_SEND_LAST_INV] = 16,
	[IB_RC_SEND_ONLY_INV] = 16, [0x1d] = 28,
	[IB_UC_SEND_FIRST] = 12, [IB_UC_SEND_MIDDLE] = 12,
	[IB_UC_SEND_LAST] = 12, [IB_UC_SEND_LAST_IMM] = 16,
	[IB_UC_SEND_ONLY] = 12, [IB_UC_SEND_ONLY_IMM] = 16,
	[IB_UC_WRITE_FIRST] = 28, [IB_UC_WRITE_MIDDLE] = 12,
	[IB_UC_WRITE_LAST] = 12, [IB_UC_WRITE_LAST_IMM] = 16,
	[IB_UC_WRITE_ONLY] = 28, [IB_UC_WRITE_ONLY_IMM] = 32,
	[IB_UD_SEND_ONLY] = 20, [IB_UD_SEND_ONLY_IMM] = 24,
	[IB_CNP] = 28,
};

static void
check_layout(uint8_t op, uint8_t length, const int *hdr, const uint8_t *off)
{
	const struct ib_opcode_info *info = &ib_opcode[op];
	unsigned int i;

	CHECK(info->length == length, "%s: length %u, want %u", info->name,
	      info->length, length);
	for (i = 0; hdr[i] >= 0; i++) {
		CHECK(info->mask & (1u << hdr[i]), "%s: header %d missing",
		      info->name, hdr[i]);
		CHECK(info->offset[hdr[i]] == off[i], "%s: header %d at %u, want %u",
		      info->name, hdr[i], info->offset[hdr[i]], off[i]);
	}
}

/* The parts of a packet, as in the opcode's name. */
static int
name_has(const struct ib_opcode_info *info, const char *word)
{
	return strstr(info->name, word) != NULL;
}

static void
check_opcode_rules(unsigned int op)
{
	const struct ib_opcode_info *info = &ib_opcode[op];
	uint32_t m = info->mask, pos, transport, next = IB_BTH_LEN;
	unsigned int h;

	CHECK(info->name != NULL, "opcode %#x has no name", op);
	transport = m & (IB_M_RC | IB_M_UC | IB_M_UD | IB_M_CNP);
	CHECK(__builtin_popcount(transport) == 1, "%s: transport bits %#x",
	      info->name, transport);
	/* IBA 9.2: the top three opcode bits are the transport. */
	CHECK(transport == (op >> 5 == 0 ? IB_M_RC : op >> 5 == 1 ? IB_M_UC :
			    op >> 5 == 3 ? IB_M_UD : IB_M_CNP),
	      "%s: opcode %#x under the wrong transport", info->name, op);

	pos = m & (IB_M_FIRST | IB_M_MIDDLE | IB_M_LAST);
	if (m & IB_M_CNP) {
		CHECK(pos == 0 && !(m & (IB_M_REQ | IB_M_RESP)),
		      "CNP belongs to no message: mask %#x", m);
	} else {
		CHECK(pos == IB_M_FIRST || pos == IB_M_MIDDLE ||
		      pos == IB_M_LAST || pos == IB_M_ONLY,
		      "%s: position bits %#x", info->name, pos);
		CHECK(!(m & IB_M_REQ) != !(m & IB_M_RESP),
		      "%s: not exactly one of request/response", info->name);
		CHECK((pos == IB_M_FIRST) == name_has(info, "_FIRST") &&
		      (pos == IB_M_MIDDLE) == name_has(info, "_MIDDLE") &&
		      (pos == IB_M_LAST) == name_has(info, "_LAST"),
		      "%s: position bits %#x disagree with the name",
		      info->name, pos);
		CHECK(!name_has(info, "_ONLY") || pos == IB_M_ONLY,
		      "%s: ONLY is FIRST|LAST, bits %#x", info->name, pos);
	}
	CHECK(!!(m & IB_M_IMMDT) == name_has(info, "IMMEDIATE"),
	      "%s: ImmDt bit", info->name);
	CHECK(!!(m & IB_M_IETH) == name_has(info, "INVALIDATE"),
	      "%s: IETH bit", info->name);
	/* Only a message's last packet consumes a receive WQE. */
	if (m & IB_M_COMP)
		CHECK((m & IB_M_LAST) && (m & IB_M_REQ), "%s: COMP bit",
		      info->name);

	CHECK(info->length == iba_length[op], "%s: length %u, IBA says %u",
	      info->name, info->length, iba_length[op]);
	/* Present headers sit back to back in enum ib_hdr order. */
	for (h = 0; h < IB_HDR_PAYLOAD; h++) {
		if (!(m & (1u << h)))
			continue;
		CHECK(info->offset[h] == next, "%s: header %u at %u, want %u",
		      info->name, h, info->offset[h], next);
		next += ib_hdr_len[h];
	}
	if (m & IB_M_CNP)
		next += 16;
	CHECK(next == info->length, "%s: headers end at %u, length %u",
	      info->name, next, info->length);
	if (m & IB_M_PAYLOAD)
		CHECK(info->offset[IB_HDR_PAYLOAD] == info->length,
		      "%s: payload at %u", info->name,
		      info->offset[IB_HDR_PAYLOAD]);
}

/* IBA 9.2 - 9.4, table 38: where each header of each opcode starts. */
static void
opcode_table_offsets(void)
{
	static const int reth_imm[] = { IB_HDR_RETH, IB_HDR_IMMDT, -1 };
	static const uint8_t reth_imm_off[] = { 12, 28 };
	static const int aeth_atmack[] = { IB_HDR_AETH, IB_HDR_ATMACK, -1 };
	static const uint8_t aeth_atmack_off[] = { 12, 16 };
	static const int deth_imm[] = { IB_HDR_DETH, IB_HDR_IMMDT, -1 };
	static const uint8_t deth_imm_off[] = { 12, 20 };
	static const int atmeth[] = { IB_HDR_ATMETH, -1 };
	static const int aeth[] = { IB_HDR_AETH, -1 };
	static const int reth[] = { IB_HDR_RETH, -1 };
	static const int ieth[] = { IB_HDR_IETH, -1 };
	static const int imm[] = { IB_HDR_IMMDT, -1 };
	static const int none[] = { -1 };
	static const uint8_t at12[] = { 12 };
	unsigned int op, defined = 0;

	check_layout(IB_RC_WRITE_ONLY_IMM, 12 + 16 + 4, reth_imm, reth_imm_off);
	check_layout(IB_UC_WRITE_ONLY_IMM, 12 + 16 + 4, reth_imm, reth_imm_off);
	check_layout(IB_RC_ATOMIC_ACKNOWLEDGE, 12 + 4 + 8, aeth_atmack,
		     aeth_atmack_off);
	check_layout(IB_UD_SEND_ONLY_IMM, 12 + 8 + 4, deth_imm, deth_imm_off);
	check_layout(IB_RC_READ_RESPONSE_MIDDLE, 12, none, NULL);
	check_layout(IB_RC_READ_RESPONSE_FIRST, 12 + 4, aeth, at12);
	check_layout(IB_RC_COMPARE_SWAP, 12 + 28, atmeth, at12);
	check_layout(IB_RC_FETCH_ADD, 12 + 28, atmeth, at12);
	check_layout(IB_RC_READ_REQUEST, 12 + 16, reth, at12);
	check_layout(IB_RC_SEND_ONLY_INV, 12 + 4, ieth, at12);
	check_layout(IB_RC_SEND_LAST_IMM, 12 + 4, imm, at12);
	check_layout(IB_RC_ACKNOWLEDGE, 12 + 4, aeth, at12);
	check_layout(0x1d, 12 + 16, reth, at12);	/* ATOMIC WRITE */
	CHECK((ib_opcode[0x1d].mask & IB_M_PAYLOAD) &&
	      (ib_opcode[0x1d].mask & IB_M_REQ) &&
	      !(ib_opcode[0x1d].mask & (IB_M_WRITE | IB_M_COMP)),
	      "ATOMIC WRITE: a request with payload, not an RDMA WRITE");

	CHECK(!(ib_opcode[IB_RC_READ_RESPONSE_MIDDLE].mask & IB_M_AETH),
	      "READ RESPONSE MIDDLE carries no AETH (IBA 9.2)");
	CHECK(!(ib_opcode[IB_RC_READ_REQUEST].mask & IB_M_PAYLOAD) &&
	      !(ib_opcode[IB_RC_COMPARE_SWAP].mask & IB_M_PAYLOAD) &&
	      !(ib_opcode[IB_RC_ACKNOWLEDGE].mask & IB_M_PAYLOAD),
	      "requests for data and acknowledgements carry no payload");

	for (op = 0; op < 256; op++) {
		if (ib_opcode[op].mask == 0) {
			CHECK(iba_length[op] == 0, "opcode %#x missing", op);
			CHECK(ib_opcode[op].length == 0,
			      "undefined opcode %#x has length %u", op,
			      ib_opcode[op].length);
			continue;
		}
		CHECK(iba_length[op] != 0, "%s (%#x) is not an IBA opcode",
		      ib_opcode[op].name, op);
		check_opcode_rules(op);
		defined++;
	}
	CHECK(defined == 39, "%u opcodes defined, want 39", defined);
}

/* ibv_post_send(3), table 1: operations per transport service. */
static void
wr_opcode_table(void)
{
	static const struct {
		int qpt;
		uint32_t ops;
	} allowed[] = {
		{ IBV_QPT_RC, 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM |
			1u << IBV_WR_RDMA_WRITE |
			1u << IBV_WR_RDMA_WRITE_WITH_IMM |
			1u << IBV_WR_RDMA_READ |
			1u << IBV_WR_ATOMIC_CMP_AND_SWP |
			1u << IBV_WR_ATOMIC_FETCH_AND_ADD |
			1u << IBV_WR_LOCAL_INV | 1u << IBV_WR_BIND_MW |
			1u << IBV_WR_SEND_WITH_INV | 1u << IBV_WR_ATOMIC_WRITE },
		/* No UC opcode carries an IETH: SEND_WITH_INV is RC only. */
		{ IBV_QPT_UC, 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM |
			1u << IBV_WR_RDMA_WRITE |
			1u << IBV_WR_RDMA_WRITE_WITH_IMM |
			1u << IBV_WR_LOCAL_INV | 1u << IBV_WR_BIND_MW },
		{ IBV_QPT_UD, 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM },
		/* Service types this device does not implement. */
		{ 0, 0 }, { 1, 0 }, { IBV_QPT_RAW_PACKET, 0 },
		{ IBV_QPT_XRC_SEND, 0 }, { IBV_QPT_XRC_RECV, 0 },
		{ IBV_QPT_DRIVER, 0 },
	};
	static const int bad_qpt[] = { -1, 5, 7, 256, INT_MAX, INT_MIN };
	static const int bad_op[] = { -1, 32, 33, 64, 255, INT_MAX, INT_MIN };
	unsigned int i, j;
	int op;

	for (i = 0; i < RTE_DIM(allowed); i++)
		for (op = 0; op < 32; op++)
			CHECK(ib_wr_opcode_valid(allowed[i].qpt, op) ==
			      !!(allowed[i].ops & (1u << op)),
			      "qp type %d wr opcode %d: got %d", allowed[i].qpt,
			      op, ib_wr_opcode_valid(allowed[i].qpt, op));
	for (i = 0; i < RTE_DIM(bad_qpt); i++)
		for (op = 0; op < 32; op++)
			CHECK(ib_wr_opcode_valid(bad_qpt[i], op) == 0,
			      "qp type %d accepted wr opcode %d", bad_qpt[i], op);
	for (i = 0; i < RTE_DIM(allowed); i++)
		for (j = 0; j < RTE_DIM(bad_op); j++)
			CHECK(ib_wr_opcode_valid(allowed[i].qpt, bad_op[j]) == 0,
			      "qp type %d accepted wr opcode %d",
			      allowed[i].qpt, bad_op[j]);
}

/* IBA 9.7.1: PSNs compare modulo 2^24 within half the space. */
static void
psn_arithmetic(void)
{
	static const uint32_t start[] = { 0, 1, 0x7fffff, 0x800000, 0xfffffe,
					  0xffffff };
	static const int32_t step[] = { 1, 2, 100, 0x7fffff, -1, -0x7fffff };
	unsigned int i, j;

	CHECK(psn_diff(0, 0xffffff) == 1, "0 follows 0xffffff");
	CHECK(psn_diff(0xffffff, 0) == -1, "0xffffff precedes 0");
	CHECK(psn_diff(5, 5) == 0, "equal PSNs");
	CHECK(psn_diff(0x10, 0xfffff0) == 0x20, "forward across the wrap");
	CHECK(psn_diff(0xfffff0, 0x10) == -0x20, "backward across the wrap");
	CHECK(psn_diff(0x7fffff, 0) == 0x7fffff, "largest step ahead");
	CHECK(psn_diff(0x800001, 0) == -0x7fffff, "past half: behind");
	/* The exact half is ambiguous; it must land on one side, not on 0. */
	CHECK(psn_diff(0x800000, 0) == -0x800000, "half space: %d",
	      psn_diff(0x800000, 0));
	/* Bits above the 24-bit PSN (e.g. AckReq) do not take part. */
	CHECK(psn_diff(0x1000005, 5) == 0 && psn_diff(0xff000003, 1) == 2,
	      "high bits ignored");

	for (i = 0; i < RTE_DIM(start); i++)
		for (j = 0; j < RTE_DIM(step); j++) {
			uint32_t a = start[i];
			uint32_t b = (a + (uint32_t)step[j]) & IB_PSN_MASK;

			CHECK(psn_diff(b, a) == step[j] &&
			      psn_diff(a, b) == -step[j],
			      "%#x + %d = %#x: diff %d", a, step[j], b,
			      psn_diff(b, a));
		}
	/* Every PSN's successor, the wrap included, is one ahead. */
	for (i = 0; i <= IB_PSN_MASK; i++)
		if (psn_diff((i + 1) & IB_PSN_MASK, i) != 1)
			CHECK(0, "successor of %#x", i);
}

/* IBA 9.2/9.3: field encoders and decoders are inverse; fields masked. */
static void
header_codecs_roundtrip(void)
{
	uint8_t raw[IB_BTH_LEN];
	struct ib_bth bth;
	struct ib_reth reth;
	rte_be32_t aeth;

	bth_set(&bth, IB_RC_SEND_LAST_IMM, 1, 3, 0x8001, 0xabcdef12, 1,
		0x13456789);
	memcpy(raw, &bth, sizeof(raw));
	CHECK(raw[0] == IB_RC_SEND_LAST_IMM && raw[1] == 0xb0,
	      "opcode %#x flags %#x", raw[0], raw[1]);
	CHECK(raw[2] == 0x80 && raw[3] == 0x01, "P_Key big-endian");
	CHECK(raw[4] == 0 && raw[5] == 0xcd && raw[6] == 0xef && raw[7] == 0x12,
	      "QPN is 24 bits, big-endian, under resv8a");
	CHECK(raw[8] == 0x80 && raw[9] == 0x45 && raw[10] == 0x67 &&
	      raw[11] == 0x89, "AckReq in bit 31 over a 24-bit PSN");
	CHECK(bth_opcode(&bth) == IB_RC_SEND_LAST_IMM && bth_se(&bth) &&
	      bth_pad(&bth) == 3 && bth_tver(&bth) == 0 &&
	      bth_pkey(&bth) == 0x8001 && bth_qpn(&bth) == 0xcdef12 &&
	      bth_ackreq(&bth) && bth_psn(&bth) == 0x456789,
	      "BTH decode");
	bth_set(&bth, IB_RC_ACKNOWLEDGE, 0, 0, 0xffff, 1, 0, 0xffffff);
	CHECK(!bth_se(&bth) && bth_pad(&bth) == 0 && !bth_ackreq(&bth) &&
	      bth_psn(&bth) == 0xffffff, "BTH flags clear");

	reth_set(&reth, 0x0123456789abcdefull, 0xdeadbeef, 0x80000000u);
	CHECK(((uint8_t *)&reth)[0] == 0x01 && ((uint8_t *)&reth)[15] == 0x00,
	      "RETH big-endian");
	CHECK(reth_va(&reth) == 0x0123456789abcdefull &&
	      reth_rkey(&reth) == 0xdeadbeef && reth_len(&reth) == 0x80000000u,
	      "RETH decode");

	aeth_set(&aeth, AETH_NAK_REM_ACCESS, 0x1abcdef);
	CHECK(((uint8_t *)&aeth)[0] == AETH_NAK_REM_ACCESS, "syndrome first");
	CHECK(aeth_syndrome(&aeth) == AETH_NAK_REM_ACCESS &&
	      aeth_msn(&aeth) == 0xabcdef, "AETH decode, MSN 24 bits");
}

/* Byte offsets, from the IPv4 header, of A17.3.3's variant fields. */
static int
icrc_variant(uint32_t off)
{
	return off == 1 ||			/* TOS: DSCP and ECN */
	       off == 8 ||			/* TTL */
	       off == 10 || off == 11 ||	/* header checksum */
	       off == IPV4_HLEN + 6 || off == IPV4_HLEN + 7 ||	/* UDP csum */
	       off == ROCE_HLEN + 4;		/* BTH resv8a */
}

struct corrupt_state {
	unsigned int done[NVEC];
	unsigned int frames, flips;
};

static void
flip_bits(unsigned int file, const struct roce_frame *fr, void *arg)
{
	struct corrupt_state *s = arg;
	uint8_t pkt[2048];
	uint32_t off, end = fr->iplen - IB_ICRC_LEN, crc;
	unsigned int bit;

	if (s->done[file] || frame_icrc(fr) != fr->wire_icrc)
		return;
	s->done[file] = 1;
	s->frames++;
	CHECK(fr->iplen <= sizeof(pkt), "%s #%u too long", fr->file, fr->index);
	memcpy(pkt, fr->ip, fr->iplen);
	for (off = 0; off < end; off++) {
		for (bit = 0; bit < 8; bit++) {
			pkt[off] ^= 1u << bit;
			crc = ib_icrc(pkt, end);
			/* The data path's variant must agree bit for bit. */
			CHECK(ib_icrc_inplace(pkt, end) == crc,
			      "%s #%u: in-place ICRC differs, byte %u bit %u",
			      fr->file, fr->index, off, bit);
			pkt[off] ^= 1u << bit;
			s->flips++;
			if (icrc_variant(off))
				CHECK(crc == fr->wire_icrc,
				      "%s #%u: variant byte %u bit %u changed the ICRC",
				      fr->file, fr->index, off, bit);
			else
				CHECK(crc != fr->wire_icrc,
				      "%s #%u: byte %u bit %u went undetected",
				      fr->file, fr->index, off, bit);
		}
	}
	/* All variant fields rewritten at once, as routers and NICs may. */
	for (off = 0; off < end; off++)
		if (icrc_variant(off))
			pkt[off] = (uint8_t)(0x5a + off);
	CHECK(ib_icrc(pkt, end) == fr->wire_icrc,
	      "%s #%u: rewritten variant fields changed the ICRC", fr->file,
	      fr->index);
}

/*
 * A17.3.3: every invariant bit of IP, UDP, BTH and payload is covered, and
 * the variant fields (TOS, TTL, IP checksum, UDP checksum, BTH resv8a) are
 * hashed as ones so that rewriting them in transit keeps the ICRC.
 */
static void
icrc_detects_corruption(void)
{
	struct corrupt_state s;

	memset(&s, 0, sizeof(s));
	for_each_frame(flip_bits, &s);
	CHECK(s.frames == NVEC, "only %u captures had a valid frame", s.frames);
	printf("  %u single-bit flips over %u frames\n", s.flips, s.frames);
}

/*
 * A17.3.3 over IPv6: traffic class, flow label, hop limit, the UDP
 * checksum and BTH resv8a are variant (hashed as ones), every other bit
 * counts, and the in-place variant agrees and leaves the packet as it was.
 */
static void
icrc_ipv6_variant_fields(void)
{
	static const uint32_t variant[] = {
		1, 2, 3, 7,		/* traffic class, flow label, hop limit */
		40 + 6, 40 + 7,		/* UDP checksum */
		48 + 4,			/* BTH resv8a */
	};
	uint8_t pkt[40 + 8 + 12 + 64], copy[sizeof(pkt)];
	uint32_t len = sizeof(pkt), crc, off, i;

	memset(pkt, 0, sizeof(pkt));
	pkt[0] = 0x60;
	pkt[5] = 8 + 12 + 64 + 4;
	pkt[6] = 17;
	pkt[7] = 64;
	for (i = 8; i < 40; i++)
		pkt[i] = (uint8_t)(0x20 + i);	/* addresses */
	pkt[40 + 2] = 0x12;			/* UDP 4791 */
	pkt[40 + 3] = 0xb7;
	pkt[48] = 0x04;				/* RC SEND_ONLY */
	pkt[48 + 2] = pkt[48 + 3] = 0xff;	/* P_Key */
	for (i = 60; i < len; i++)
		pkt[i] = (uint8_t)(i * 13);
	crc = ib_icrc(pkt, len);
	memcpy(copy, pkt, len);
	CHECK(ib_icrc_inplace(pkt, len) == crc, "in-place IPv6 ICRC differs");
	CHECK(memcmp(copy, pkt, len) == 0, "in-place ICRC changed the packet");
	pkt[0] |= 0x0f;
	for (i = 0; i < RTE_DIM(variant); i++)
		pkt[variant[i]] = (uint8_t)(0x5a + i);
	CHECK(ib_icrc(pkt, len) == crc, "a variant IPv6 field changed the ICRC");
	memcpy(pkt, copy, len);
	for (off = 0; off < len; off++) {
		int var = 0;

		for (i = 0; i < RTE_DIM(variant); i++)
			var |= variant[i] == off;
		if (var)
			continue;
		pkt[off] ^= off == 0 ? 0x80 : 0x01;	/* byte 0: the version */
		CHECK(ib_icrc(pkt, len) != crc, "byte %u went undetected", off);
		pkt[off] = copy[off];
	}
}

int
main(void)
{
	unsigned int i;

	load_vectors();
	RUN(icrc_matches_rxe_vectors);
	RUN(icrc_inplace_matches_icrc);
	RUN(icrc_rounds_match_icrc);
	RUN(opcode_table_parses_vectors);
	RUN(opcode_table_offsets);
	RUN(wr_opcode_table);
	RUN(psn_arithmetic);
	RUN(header_codecs_roundtrip);
	RUN(icrc_detects_corruption);
	RUN(icrc_ipv6_variant_fields);
	for (i = 0; i < NVEC; i++)
		pcap_close(&files[i]);
	CHECK_DONE();
}
