/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_FUZZ_RX_H
#define DPIB_FUZZ_RX_H

/*
 * What the receive-path fuzzer (fuzz_rx.c) and its seed writer
 * (fuzz_seeds.c) share: the fixed addresses and keys of the harness, its
 * QPs, and the input format (records of a marker byte, a 16-bit length
 * and the bytes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAIL(...) do { \
	fprintf(stderr, "fuzz_rx: BUG: " __VA_ARGS__); \
	fprintf(stderr, "\n"); \
	abort(); \
} while (0)

#define SETUP(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_rx: setup: " __VA_ARGS__); \
		fprintf(stderr, " (errno %d)\n", errno); \
		exit(2); \
	} \
} while (0)

#define PAGE		4096u
#define CANARY		0xa5
#define RO_BYTE(i)	((uint8_t)((i) * 7 + 3))
#define W_BYTE(i)	((uint8_t)((i) * 13 + 1))

#define W_LEN		(64 * 1024)
#define R_SLOTS		40
#define R_LEN		(R_SLOTS * PAGE)
#define RO_LEN		(16 * 1024)
#define X_LEN		RO_LEN		/* both checked against ro_init */
#define WC_N		(PAGE / sizeof(struct ibv_wc))	/* one page, to a guard */
#define FRAME_MAX	(16 * 1024)

/* Fixed IOVAs: seeds and crashers carry remote addresses that must mean the
 * same in every run. SGEs address MRs by IOVA too.
 */
#define W_IOVA		0x100000000ull
#define R_IOVA		0x200000000ull
#define RO_IOVA		0x300000000ull
#define X_IOVA		0x400000000ull

#define QKEY		0x11111111u	/* the Q_Key of the rxe UD capture */
#define GSI_QKEY	0x80010000u	/* QP 1's, whatever it is given (13.5.1) */
#define MAD_LEN		256		/* a whole MAD (IBA 13.4.2) */
#define MAD_CLASS_CM	0x07
#define MCAST_IP	"239.1.2.3"
#define DEV_IP		"127.0.0.1"
#define MCAST_IP6	"ff0e::1"
#define DEV_IP6		"2001:db8::1"	/* ip6 in the configuration */
#define NO_QPN		0xdead0u	/* a destination no QP answers for */
#define REQ_PSN		0xfffff8u	/* wraps inside the outstanding sends */

#define ETH_LEN		14
#define IP_LEN		20
#define IP6_LEN		40
#define UDP_LEN		8
#define BTH_OFF		(ETH_LEN + IP_LEN + UDP_LEN)
#define MAX_RECORDS	16

#define WRID_MAGIC	0xf2ull
#define WRID(qi, send, seq) (WRID_MAGIC << 56 | (uint64_t)(qi) << 48 | \
			     (uint64_t)(send) << 47 | ((seq) & 0x7fffffffffffull))

/* QP indexes, which are also the 3-bit target of an input record: Q_GSI
 * is QP 1, or with mode bit M_MCAST QPN 0xffffff (the UD QP's group).
 */
enum { Q_RC_A, Q_RC_B, Q_RC_REQ, Q_UC, Q_UD, Q_RC_SRQ, Q_RC_RTR, Q_GSI, NQP };
#define M_MCAST		0x20

/* Write the seed corpus into @dir: synthetic conversations with each QP
 * and the rxe captures, addressed with the harness's keys.
 */
void fuzz_seeds_write(const char *dir, uint32_t w_rkey, uint32_t ro_rkey,
		      uint32_t mw_ro_rkey);

#endif
