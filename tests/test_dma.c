/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * MRs a NIC can DMA from (issue 18): with DMA registration on (a PCI port,
 * or DPIB_DMA=on as here on the loopback device), every MR's pages are
 * DPDK external memory with the right IOVAs and page size, overlapping MRs
 * share them, deregistration and re-registration give them back, memory
 * unmapped under a live MR is never trusted again, and data still flows.
 * Without it (DPIB_DMA unset on a virtual port) nothing is registered.
 *
 * The test calls DPDK itself (the same librte_eal dpib's libibverbs uses)
 * to see what DPDK knows about each address.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include "verbs_util.h"

#define PG 4096

static struct ibv_device **list;
static int zero_copy_on;		/* DPIB_ZERO_COPY not "off" */
static struct ibv_context *ctx;
static struct ibv_pd *pd;

/* What DPDK knows of @p: 0 nothing, else the page size of its memseg. */
static size_t
known(const void *p)
{
	struct rte_memseg_list *msl = rte_mem_virt2memseg_list(p);

	return msl != NULL ? msl->page_sz : 0;
}

static int
external(const void *p)
{
	struct rte_memseg_list *msl = rte_mem_virt2memseg_list(p);

	return msl != NULL && msl->external;
}

static struct ibv_mr *
reg(void *p, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ);

	CHECK(mr != NULL, "reg_mr %p+%zu: errno %d", p, len, errno);
	return mr;
}

static uint8_t *
pages(size_t n)
{
	uint8_t *p = aligned_alloc(PG, n * PG);

	CHECK(p != NULL, "alloc");
	memset(p, 0x5a, n * PG);
	return p;
}

/* An MR of heap memory is registered page-wise with its IOVAs. */
static void
heap_mr_registered(void)
{
	uint8_t *b = pages(4);
	struct ibv_mr *mr = reg(b + 100, 2 * PG);	/* pages 0..2 */
	rte_iova_t want;

	CHECK(dpib_mr_dma(mr) == 1, "MR not DMA-mapped");
	CHECK(external(b) && external(b + 3 * PG - 1), "pages 0..2 external");
	CHECK(known(b) == PG, "page size %zu", known(b));
	CHECK(known(b + 3 * PG) == 0, "page 3 untouched");
	want = rte_eal_iova_mode() == RTE_IOVA_PA ?
	       rte_mem_virt2phy(b + PG + 7) : (rte_iova_t)(uintptr_t)(b + PG + 7);
	CHECK(rte_mem_virt2iova(b + PG + 7) == want, "IOVA %#lx, want %#lx",
	      (unsigned long)rte_mem_virt2iova(b + PG + 7), (unsigned long)want);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(known(b) == 0 && known(b + 2 * PG) == 0, "unregistered");
	free(b);
}

/*
 * Overlapping MRs share regions; a region (never split) goes with the last
 * MR holding it.
 */
static void
overlapping_mrs(void)
{
	uint8_t *b = pages(8);
	struct ibv_mr *a = reg(b, 3 * PG);		/* 0..2: region A */
	struct ibv_mr *c = reg(b + 2 * PG, 4 * PG);	/* + 3..5: region C */
	struct ibv_mr *d = reg(b + PG, 6 * PG);		/* + 6: region D */
	struct ibv_mr *e = reg(b + 2 * PG + 8, 16);	/* inside A */
	int i;

	for (i = 0; i < 7; i++)
		CHECK(external(b + i * PG), "page %d", i);
	CHECK(!external(b + 7 * PG), "page 7");
	CHECK(ibv_dereg_mr(a) == 0, "dereg a");
	for (i = 0; i < 7; i++)
		CHECK(external(b + i * PG), "page %d stays", i);
	CHECK(ibv_dereg_mr(d) == 0, "dereg d");
	CHECK(!external(b + 6 * PG), "region D went with d");
	for (i = 0; i < 6; i++)
		CHECK(external(b + i * PG), "page %d stays for c, e", i);
	CHECK(ibv_dereg_mr(c) == 0, "dereg c");
	CHECK(external(b) && external(b + 2 * PG) && !external(b + 3 * PG) &&
	      !external(b + 5 * PG), "e keeps region A, C went");
	CHECK(ibv_dereg_mr(e) == 0, "dereg e");
	for (i = 0; i < 8; i++)
		CHECK(!external(b + i * PG), "page %d left", i);
	free(b);
}

/* A translation change moves the registration with it. */
static void
rereg_moves(void)
{
	uint8_t *b1 = pages(2), *b2 = pages(2);
	struct ibv_mr *mr = reg(b1, 2 * PG);

	CHECK(external(b1) && !external(b2), "before");
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b2,
			   2 * PG, 0) == 0, "rereg errno %d", errno);
	CHECK(!external(b1) && external(b2) && dpib_mr_dma(mr) == 1, "after");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(!external(b2), "gone");
	free(b1);
	free(b2);
}

/*
 * Memory unmapped under a live MR and mapped again at the same address is
 * other memory: its old IOVAs must not serve a new MR, which works
 * through the CPU copy until the old MR is deregistered.
 */
static void
unmapped_under_mr(void)
{
	uint8_t *b = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct ibv_mr *old, *mr;

	CHECK(b != MAP_FAILED, "mmap");
	old = reg(b, 2 * PG);
	CHECK(munmap(b, 2 * PG) == 0, "munmap");
	CHECK(mmap(b, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		   MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0) == b,
	      "mmap again");
	mr = reg(b, 2 * PG);
	CHECK(dpib_mr_dma(mr) == 0, "new MR trusted stale IOVAs");
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(old) == 0, "dereg");
	CHECK(!external(b), "old regions went with the old MR");
	mr = reg(b, 2 * PG);
	CHECK(dpib_mr_dma(mr) == 1 && external(b), "registered afresh");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(b, 2 * PG);
}

/*
 * The same when the changed page belongs to a region that an MR not
 * covering it still holds: the region's IOVAs for that page are stale.
 */
static void
unmapped_beside_mr(void)
{
	uint8_t *b = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct ibv_mr *wide, *keep, *mr;

	CHECK(b != MAP_FAILED, "mmap");
	wide = reg(b, 3 * PG);
	keep = reg(b + 2 * PG, PG);
	CHECK(ibv_dereg_mr(wide) == 0, "dereg wide");
	if (rte_eal_iova_mode() == RTE_IOVA_PA) {
		/* Physical addresses: the region pins its pages (mlock), so
		 * none can be discarded under it (hugepages reserved: EAL
		 * then runs IOVA as PA).
		 */
		CHECK(madvise(b, PG, MADV_DONTNEED) != 0 && errno == EINVAL,
		      "a page of a pinned region was discarded");
		CHECK(dpib_mr_dma(keep) == 1, "the MR beside keeps its pages");
		CHECK(ibv_dereg_mr(keep) == 0, "dereg");
		CHECK(!external(b) && !external(b + 2 * PG), "all gone");
		munmap(b, 3 * PG);
		return;
	}
	CHECK(madvise(b, PG, MADV_DONTNEED) == 0, "discard page 0");
	mr = reg(b, PG);
	CHECK(dpib_mr_dma(mr) == 0, "stale region used");
	CHECK(dpib_mr_dma(keep) == 1, "the MR beside keeps its pages");
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(keep) == 0, "dereg");
	CHECK(!external(b) && !external(b + 2 * PG), "all gone");
	munmap(b, 3 * PG);
}

/* DPDK's own memory is DMA-mapped already: no external region. */
static void
dpdk_memory(void)
{
	uint8_t *b = rte_malloc("test", 3 * PG, PG);
	struct ibv_mr *mr;

	CHECK(b != NULL, "rte_malloc");
	mr = reg(b, 3 * PG);
	CHECK(dpib_mr_dma(mr) == 1 && known(b) != 0 && !external(b),
	      "DPDK memory: dma %d external %d", dpib_mr_dma(mr), external(b));
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(known(b) != 0, "DPDK's memory stays DPDK's");
	rte_free(b);
}

static long hugepages_before = -1;

static long
nr_hugepages(long set)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", set >= 0 ? "w" : "r");
	long v = -1;

	if (f == NULL)
		return -1;
	if (set >= 0)
		v = fprintf(f, "%ld\n", set) > 0 ? set : -1;
	else if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	return fclose(f) == 0 ? v : -1;
}

static void
hugepages_restore(void)
{
	if (hugepages_before >= 0)
		nr_hugepages(hugepages_before);
}

/*
 * dpib_alloc_buf() hands out hugepages (this test reserves some), and an MR
 * on them is registered with the hugepage size: one IOVA per 2 MiB.
 */
static void
hugepage_buffer(void)
{
	size_t pgsz = 0;
	uint8_t *b = dpib_alloc_buf(3 << 20, &pgsz);
	struct ibv_mr *mr;

	CHECK(b != NULL, "dpib_alloc_buf errno %d", errno);
	CHECK(pgsz >= (2u << 20), "page size %zu: hugepages reserved by the "
	      "test were not used", pgsz);
	CHECK(((uintptr_t)b & (pgsz - 1)) == 0 && b[0] == 0 &&
	      b[(3 << 20) - 1] == 0, "aligned, zeroed");
	mr = reg(b + 4096, 3 << 20);	/* pages 0 and 1 of 2 */
	CHECK(dpib_mr_dma(mr) == 1 && known(b) == pgsz && external(b) &&
	      external(b + 2 * pgsz - 1), "registered with %zu", known(b));
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(!external(b), "unregistered");
	CHECK(dpib_free_buf(b) == 0, "free");
	CHECK(dpib_free_buf(b) == -1 && errno == EINVAL, "double free");
}

/* RDMA WRITE and READ between MRs that are DPDK external memory. */
static void
data_through_dma_mrs(void)
{
	struct pair_opts o = {
		.buflen = 1 << 20, .max_wr = 16, .max_sge = 1,
		.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ,
		.qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.max_rd_atomic = 1, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7,
	};
	size_t half = o.buflen / 2;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct pair p;
	int op;

	pair_open(&p, &o);
	pair_connect(&p, &o);
	CHECK(dpib_mr_dma(p.mr) == 1 && external(p.buf), "pair MR");
	for (op = 0; op < 2; op++) {
		fill_pattern(p.buf, half, op + 1);
		memset(p.buf + half, 0, half);
		sge = (struct ibv_sge){ .lkey = p.mr->lkey, .length = half,
			.addr = (uintptr_t)(op == 0 ? p.buf : p.buf + half) };
		wr = (struct ibv_send_wr){
			.sg_list = &sge, .num_sge = 1,
			.opcode = op == 0 ? IBV_WR_RDMA_WRITE :
					    IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .rkey = p.mr->rkey, .remote_addr =
				(uintptr_t)(op == 0 ? p.buf + half : p.buf) },
		};
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
		CHECK(poll_one(p.cq[0], &wc, 10) && wc.status == IBV_WC_SUCCESS,
		      "op %d status %d", op, wc.status);
		CHECK(memcmp(p.buf, p.buf + half, half) == 0, "op %d data", op);
	}
	pair_close(&p);
}

/*
 * Zero copy (the loopback device takes chained frames): RC and UC WRITE
 * and SEND of whole MTU packets go out pointing into the MR, messages
 * whose packets straddle SGEs fall back to the copy, and every byte lands
 * where it belongs. Returns the packets sent zero-copy.
 */
static uint64_t
zero_copy_run(enum ibv_qp_type type)
{
	struct pair_opts o = {
		.buflen = 4 << 20, .max_wr = 16, .max_sge = 2,
		.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ,
		.qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.max_rd_atomic = 4, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7,
	};
	unsigned int nops = type == IBV_QPT_RC ? 3 : 2;	/* + READ */
	size_t q = o.buflen / 4, lens[] = { 65536, 1 << 20, 5000, 4096 };
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge[2], rsge;
	uint64_t before, after;
	struct ibv_wc wc;
	struct pair p;
	unsigned int i, op;

	pair_open(&p, &o);
	if (type == IBV_QPT_UC) {	/* the same pair, unreliable */
		pair_make_uc(&p, &o, 0);
	} else {
		pair_connect(&p, &o);
	}
	before = dev_counter(p.ctx, "tx_zero_copy_packets");
	for (i = 0; i < DIM(lens); i++)
		for (op = 0; op < nops; op++) {
			size_t len = lens[i];
			int split = len == 5000 && op < 2;	/* two SGEs */

			fill_pattern(p.buf, len, i * 2 + op + 7);
			memset(p.buf + 2 * q, 0, len);
			sge[0] = (struct ibv_sge){ .addr = (uintptr_t)p.buf,
				.length = split ? 1000 : len,
				.lkey = p.mr->lkey };
			sge[1] = (struct ibv_sge){ .addr = (uintptr_t)p.buf +
				1000, .length = len - 1000, .lkey = p.mr->lkey };
			wr = (struct ibv_send_wr){ .sg_list = sge,
				.num_sge = split ? 2 : 1,
				.opcode = op == 2 ? IBV_WR_RDMA_READ :
					  op ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .rkey = p.mr->rkey,
					.remote_addr = (uintptr_t)p.buf + 2 * q },
			};
			if (op == 2) {	/* READ: from buf into buf + 2q */
				sge[0].addr = (uintptr_t)p.buf + 2 * q;
				wr.wr.rdma.remote_addr = (uintptr_t)p.buf;
			}
			if (op == 1) {
				rsge = (struct ibv_sge){ .length = len,
					.addr = (uintptr_t)p.buf + 2 * q,
					.lkey = p.mr->lkey };
				rwr = (struct ibv_recv_wr){ .sg_list = &rsge,
					.num_sge = 1 };
				CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0,
				      "post_recv");
			}
			CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
			CHECK(poll_one(p.cq[0], &wc, 10) &&
			      wc.status == IBV_WC_SUCCESS, "%zu op %u: %d",
			      len, op, wc.status);
			if (op == 1)
				CHECK(poll_one(p.cq[1], &wc, 10) &&
				      wc.status == IBV_WC_SUCCESS &&
				      wc.byte_len == len, "recv %zu", len);
			else	/* UC: the data follows the send completion */
				for (int t = 0; t < 1000 &&
				     memcmp(p.buf, p.buf + 2 * q, len) != 0; t++)
					usleep(1000);
			CHECK(memcmp(p.buf, p.buf + 2 * q, len) == 0,
			      "%zu op %u: data", len, op);
		}
	/* A bad lkey on a zero-copy-sized message is still caught. */
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)p.buf, .length = 65536,
				   .lkey = p.mr->lkey + 1 };
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.num_sge = 1;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post bad lkey");
	CHECK(poll_one(p.cq[0], &wc, 10) && wc.status == IBV_WC_LOC_PROT_ERR,
	      "bad lkey: status %d", wc.status);
	after = dev_counter(p.ctx, "tx_zero_copy_packets");
	CHECK(ibv_destroy_qp(p.qp[0]) == 0 && ibv_destroy_qp(p.qp[1]) == 0,
	      "destroy");
	p.qp[0] = p.qp[1] = NULL;
	CHECK(ibv_destroy_cq(p.cq[0]) == 0 && ibv_destroy_cq(p.cq[1]) == 0 &&
	      ibv_dereg_mr(p.mr) == 0 && ibv_dealloc_pd(p.pd) == 0 &&
	      ibv_close_device(p.ctx) == 0, "close");
	ibv_free_device_list(p.list);
	free(p.buf);
	return after - before;
}

/*
 * MTU 4096: 16 + 256 + 1 packets a message kind (5000 bytes over two
 * SGEs: none), 273 x 2 in all; READ responses come from one MR, 5000
 * bytes of them in a full packet and a short one: 274.
 */
static void
zero_copy_rc(void)
{
	uint64_t n = zero_copy_run(IBV_QPT_RC);

	CHECK(zero_copy_on ? n == 2 * (16 + 256 + 1) + 274 : n == 0,
	      "%lu packets zero-copy", (unsigned long)n);
}

static void
zero_copy_uc(void)
{
	uint64_t n = zero_copy_run(IBV_QPT_UC);

	CHECK(zero_copy_on ? n == 2 * (16 + 256 + 1) : n == 0,
	      "%lu packets zero-copy", (unsigned long)n);
}

/* Without DMA registration (a virtual port by default) nothing is. */
static void
virtual_port_registers_nothing(void)
{
	uint8_t *b = pages(2);
	struct ibv_mr *mr = reg(b, 2 * PG);

	CHECK(dpib_mr_dma(mr) == 0 && !external(b), "registered anyway");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	free(b);
}

int
main(void)
{
	const char *dma = getenv("DPIB_DMA");
	int on = dma != NULL && strcmp(dma, "on") == 0;
	long before = nr_hugepages(-1);

	list = ibv_get_device_list(NULL);
	CHECK(list != NULL && list[0] != NULL, "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx != NULL, "open");
	/* Hugepages for dpib_alloc_buf, after EAL took its memory. */
	if (on && before >= 0 && geteuid() == 0) {
		hugepages_before = before;
		atexit(hugepages_restore);
		CHECK(nr_hugepages(before + 8) == before + 8,
		      "reserve 8 hugepages");
	}
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "pd");
	zero_copy_on = getenv("DPIB_ZERO_COPY") == NULL ||
		       strcmp(getenv("DPIB_ZERO_COPY"), "off") != 0;
	RUN(zero_copy_rc);
	RUN(zero_copy_uc);
	if (!on) {
		RUN(virtual_port_registers_nothing);
	} else {
		RUN(heap_mr_registered);
		RUN(overlapping_mrs);
		RUN(rereg_moves);
		RUN(unmapped_under_mr);
		RUN(unmapped_beside_mr);
		RUN(dpdk_memory);
		if (hugepages_before >= 0)
			RUN(hugepage_buffer);
		else
			printf("# hugepage_buffer needs root\n");
		RUN(data_through_dma_mrs);
	}
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc pd");
	CHECK(ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
	CHECK_DONE();
}
