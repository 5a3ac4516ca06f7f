/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_verbs: protection domains and local access, ibv_rereg_mr.
 */
#include "verbs_lb.h"

/*
 * Memory protection: an MR of another PD is a local protection error
 * locally and a remote access error remotely; a READ may only land in a
 * region with local write access (ibv_post_send(3) table 3).
 */
void
protection_domains_and_local_access(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *other = ibv_reg_mr(pd2, buf + 256 * 1024, 4096,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mr *ro = ibv_reg_mr(pd, buf + 300 * 1024, 4096, 0);
	struct ibv_qp *a, *b;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	CHECK(pd2 != NULL && other != NULL && ro != NULL, "setup");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* Local: the lkey of another PD's MR. */
	sge = (struct ibv_sge){ (uintptr_t)buf + 256 * 1024, 8, other->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	expect(cq, 1, IBV_WC_LOC_PROT_ERR, NULL);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* Remote: the rkey of another PD's MR. */
	sge = (struct ibv_sge){ (uintptr_t)buf, 8, mr->lkey };
	wr.wr_id = 2;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 256 * 1024;
	wr.wr.rdma.rkey = other->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	expect(cq, 2, IBV_WC_REM_ACCESS_ERR, NULL);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* A READ into a region without IBV_ACCESS_LOCAL_WRITE. */
	sge = (struct ibv_sge){ (uintptr_t)buf + 300 * 1024, 8, ro->lkey };
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	expect(cq, 3, IBV_WC_LOC_PROT_ERR, NULL);
	/* A SEND from it is fine: sending needs no local access right. */
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_dealloc_pd(pd2) == EBUSY, "PD with an MR freed");
	CHECK(ibv_dereg_mr(other) == 0 && ibv_dereg_mr(ro) == 0, "dereg");
	CHECK(ibv_dealloc_pd(pd2) == 0 && ibv_destroy_cq(cq) == 0, "teardown");
	/* Registration rules: remote write needs local write. */
	errno = 0;
	CHECK(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE) == NULL &&
	      errno == EINVAL, "REMOTE_WRITE without LOCAL_WRITE");
}

/* One RDMA WRITE from @a through @rkey to @raddr; its completion status. */
static enum ibv_wc_status
write_status(struct ibv_qp *a, struct ibv_cq *cq, uint32_t rkey,
	     uint64_t raddr, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { raddr, rkey } }, *bad;
	struct ibv_wc wc;

	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	CHECK(poll_one(cq, &wc, 5) && wc.wr_id == wr_id, "completion");
	return wc.status;
}

/*
 * ibv_rereg_mr(3): access, translation and PD change in place, keys kept,
 * enforced from the next access; bad input leaves the MR as it was.
 */
void
rereg_mr_rules(void)
{
	uint8_t *area = aligned_alloc(4096, 3 * 8192);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *m;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a, *b;
	uint32_t lkey, rkey;

	CHECK(area != NULL && pd2 != NULL, "setup");
	memset(area, 0, 3 * 8192);
	m = ibv_reg_mr(pd, area, 8192, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	CHECK(m != NULL, "reg");
	lkey = m->lkey;
	rkey = m->rkey;
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	fill_pattern(buf, 64, 21);
	CHECK(write_status(a, cq, rkey, (uintptr_t)area, 1) == IBV_WC_SUCCESS,
	      "WRITE before");
	/* Bad input: the MR stays as it was. As rdma-core: what libibverbs
	 * checks is ERR_INPUT, what the kernel (here the provider) refuses is
	 * ERR_CMD; errno EINVAL in every case here.
	 */
	errno = 0;
	CHECK(ibv_rereg_mr(m, 0, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_CMD &&
	      errno == EINVAL, "no flags");
	errno = 0;
	CHECK(ibv_rereg_mr(m, 1 << 7, NULL, NULL, 0, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EINVAL, "unknown flag");
	errno = 0;
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == IBV_REREG_MR_ERR_INPUT &&
	      errno == EINVAL, "access flags without CHANGE_ACCESS");
	errno = 0;
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL,
			   4096, 0) == IBV_REREG_MR_ERR_INPUT &&
	      errno == EINVAL, "translation without an address");
	errno = 0;
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE) == IBV_REREG_MR_ERR_CMD &&
	      errno == EINVAL, "REMOTE_WRITE without LOCAL_WRITE");
	CHECK(write_status(a, cq, rkey, (uintptr_t)area + 64, 2) ==
	      IBV_WC_SUCCESS, "WRITE after refused rereg");
	/* Access: remote write withdrawn, then given back. Keys unchanged. */
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == 0, "rereg access");
	CHECK(m->lkey == lkey && m->rkey == rkey, "keys changed");
	CHECK(write_status(a, cq, rkey, (uintptr_t)area, 3) ==
	      IBV_WC_REM_ACCESS_ERR, "WRITE after access dropped");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* Translation (with access back): the same rkey now means the new
	 * range, the old one is outside the region.
	 */
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_TRANSLATION |
			   IBV_REREG_MR_CHANGE_ACCESS, NULL, area + 16384, 8192,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0,
	      "rereg translation");
	CHECK(m->addr == area + 16384 && m->length == 8192 && m->rkey == rkey,
	      "ibv_mr fields");
	CHECK(write_status(a, cq, rkey, (uintptr_t)area + 16384, 4) ==
	      IBV_WC_SUCCESS && !memcmp(area + 16384, buf, 64),
	      "WRITE into the new range");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	CHECK(write_status(a, cq, rkey, (uintptr_t)area, 5) ==
	      IBV_WC_REM_ACCESS_ERR, "WRITE into the old range");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	/* PD: a receive buffer in an MR of another PD is a protection error
	 * at the responder, a remote operational error at the requester.
	 */
	{
		struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		struct ibv_sge sge = { (uintptr_t)area + 16384, 64, m->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 6, .sg_list = &sge,
					   .num_sge = 1 }, *rbad;

		a = make_qp(IBV_QPT_RC, cq, cq, NULL);
		b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
		connect_pair(a, b);
		CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) ==
		      0 && m->pd == pd2, "rereg PD");
		CHECK(ibv_post_recv(b, &rwr, &rbad) == 0, "post_recv");
		CHECK(post_send(a, IBV_WR_SEND, 0, 32, 7, 0) == 0, "send");
		expect(rcq, 6, IBV_WC_LOC_PROT_ERR, NULL);
		expect(cq, 7, IBV_WC_REM_OP_ERR, NULL);
		CHECK(ibv_dealloc_pd(pd2) == EBUSY, "PD of the MR freed");
		CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 &&
		      ibv_destroy_cq(rcq) == 0, "destroy");
	}
	CHECK(ibv_dereg_mr(m) == 0 && ibv_dealloc_pd(pd2) == 0 &&
	      ibv_destroy_cq(cq) == 0, "teardown");
	free(area);
}

/*
 * Shared objects within the process (ibv_import_device(3) and its PD and
 * MR imports, as rdma-core's tests/test_shared_pd.py uses them): a dup of
 * the context's cmd_fd opens a second context of the same file, in which
 * the PD's and the MR's handles name them; a QP made in the imported PD,
 * with a CQ of the second context, WRITEs with the imported MR's lkey into
 * a QP of the original PD. A context of another file knows no handle;
 * a descriptor that is no context's is EOPNOTSUPP; an imported PD keeps
 * its original from being deallocated; the second context owns the dup.
 */
void
shared_pd_imports_in_process(void)
{
	struct ibv_context *ctx2, *other;
	struct ibv_pd *pd2, *ipd, *ipd2;
	struct ibv_mr *imr;
	struct ibv_cq *cq2, *cq, *ocq;
	struct ibv_qp *a, *b;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE }, *bad;
	uint32_t h2;
	int fd, nul;

	CHECK(ctx->cmd_fd >= 0, "cmd_fd %d", ctx->cmd_fd);
	fd = dup(ctx->cmd_fd);
	CHECK(fd >= 0, "dup cmd_fd: errno %d", errno);
	ctx2 = ibv_import_device(fd);
	CHECK(ctx2 != NULL && ctx2 != ctx && ctx2->device == ctx->device &&
	      ctx2->cmd_fd == fd, "import_device: errno %d", errno);
	nul = open("/dev/null", O_RDWR);
	errno = 0;
	CHECK(ibv_import_device(nul) == NULL && errno == EOPNOTSUPP,
	      "import of a descriptor that is no context's: errno %d", errno);
	close(nul);

	ipd = ibv_import_pd(ctx2, pd->handle);
	CHECK(ipd != NULL && ipd != pd && ipd->context == ctx2 &&
	      ipd->handle == pd->handle, "import_pd: errno %d", errno);
	errno = 0;
	CHECK(ibv_import_pd(ctx2, pd->handle + 1000) == NULL && errno == EINVAL,
	      "import of no PD: errno %d", errno);
	other = ibv_open_device(ctx->device);
	CHECK(other != NULL, "open_device");
	errno = 0;
	CHECK(ibv_import_pd(other, pd->handle) == NULL && errno == EINVAL,
	      "a PD imported into a context of another file: errno %d", errno);
	imr = ibv_import_mr(ipd, mr->handle);
	CHECK(imr != NULL && imr->lkey == mr->lkey && imr->rkey == mr->rkey &&
	      imr->length == mr->length && imr->pd == ipd && imr->addr == NULL,
	      "import_mr: errno %d", errno);
	errno = 0;
	CHECK(ibv_import_mr(ipd, mr->handle ^ 0xffffff00u) == NULL &&
	      errno == EINVAL, "import of no MR: errno %d", errno);
	CHECK(ibv_dereg_mr(imr) == EINVAL, "dereg of an import");
	CHECK(ibv_dealloc_pd(ipd) == EINVAL, "dealloc of an import");

	/* Traffic: the imported PD's QP and the original's. */
	cq2 = ibv_create_cq(ctx2, 16, NULL, NULL, 0);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ocq = ibv_create_cq(other, 16, NULL, NULL, 0);
	CHECK(cq2 != NULL && cq != NULL && ocq != NULL, "create_cq");
	ia.send_cq = ia.recv_cq = ocq;
	errno = 0;
	CHECK(ibv_create_qp(ipd, &ia) == NULL && errno == EINVAL,
	      "a CQ of another file: errno %d", errno);
	ia.send_cq = ia.recv_cq = cq2;
	a = ibv_create_qp(ipd, &ia);
	CHECK(a != NULL, "create_qp in the imported PD: errno %d", errno);
	ia.send_cq = ia.recv_cq = cq;
	b = ibv_create_qp(pd, &ia);
	CHECK(b != NULL, "create_qp: errno %d", errno);
	connect_pair(a, b);
	fill_pattern(buf + 4096, 256, 41);
	memset(buf + 8192, 0, 256);
	sge = (struct ibv_sge){ (uintptr_t)buf + 4096, 256, imr->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 8192;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post with the imported lkey");
	expect(cq2, 5, IBV_WC_SUCCESS, NULL);
	CHECK(memcmp(buf + 4096, buf + 8192, 256) == 0, "WRITE's bytes");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy qps");
	CHECK(ibv_destroy_cq(cq2) == 0 && ibv_destroy_cq(cq) == 0 &&
	      ibv_destroy_cq(ocq) == 0, "destroy cqs");
	ibv_unimport_mr(imr);
	ibv_unimport_pd(ipd);

	/* An imported PD keeps its original. */
	pd2 = ibv_alloc_pd(ctx);
	CHECK(pd2 != NULL && pd2->handle != pd->handle, "alloc_pd");
	ipd2 = ibv_import_pd(ctx2, pd2->handle);
	CHECK(ipd2 != NULL, "import_pd: errno %d", errno);
	CHECK(ibv_dealloc_pd(pd2) == EBUSY, "dealloc of an imported PD");
	ibv_unimport_pd(ipd2);
	h2 = pd2->handle;
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc after unimport");
	errno = 0;
	CHECK(ibv_import_pd(ctx2, h2) == NULL && errno == EINVAL,
	      "import of a deallocated PD: errno %d", errno);

	CHECK(ibv_close_device(other) == 0, "close other");
	CHECK(ibv_close_device(ctx2) == 0, "close imported");
	CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF,
	      "the imported context's close left its cmd_fd open");
}
