/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * An MPI program with checked results, for Open MPI's UCX PML on dpib
 * (tests/mpi.sh): ping-pong from 1 byte to 4 MiB (eager and rendezvous
 * protocols, RDMA for the large ones), allreduce of a vector, alltoall of
 * rank-stamped blocks. Exits non-zero on the first wrong byte.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define FAIL(...) do { \
	fprintf(stderr, "rank %d: FAIL: ", rank); \
	fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, "\n"); \
	MPI_Abort(MPI_COMM_WORLD, 1); \
} while (0)

static uint8_t
pattern(size_t i, int seed)
{
	return (uint8_t)(i * 7 + seed * 13 + (i >> 9));
}

/* Rank 0 sends, rank 1 checks and sends back, rank 0 checks. */
static void
pingpong(size_t len, int iters)
{
	uint8_t *buf = malloc(len);
	MPI_Status st;
	size_t i;
	int it;

	if (buf == NULL)
		FAIL("malloc %zu", len);
	for (it = 0; it < iters; it++) {
		if (rank == 0) {
			for (i = 0; i < len; i++)
				buf[i] = pattern(i, it);
			MPI_Send(buf, (int)len, MPI_BYTE, 1, it, MPI_COMM_WORLD);
			memset(buf, 0, len);
			MPI_Recv(buf, (int)len, MPI_BYTE, 1, it, MPI_COMM_WORLD,
				 &st);
			for (i = 0; i < len; i++)
				if ((uint8_t)(buf[i] ^ pattern(i, it)) != 0xff)
					FAIL("pingpong %zu: byte %zu", len, i);
		} else if (rank == 1) {
			MPI_Recv(buf, (int)len, MPI_BYTE, 0, it, MPI_COMM_WORLD,
				 &st);
			for (i = 0; i < len; i++) {
				if (buf[i] != pattern(i, it))
					FAIL("pingpong %zu: byte %zu", len, i);
				buf[i] = (uint8_t)~buf[i];
			}
			MPI_Send(buf, (int)len, MPI_BYTE, 0, it, MPI_COMM_WORLD);
		}
	}
	free(buf);
}

static void
allreduce(int n)
{
	double *in = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
	int i;

	if (in == NULL || out == NULL)
		FAIL("malloc");
	for (i = 0; i < n; i++)
		in[i] = (double)(rank + 1) * i;
	MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < n; i++)
		if (out[i] != (double)size * (size + 1) / 2 * i)
			FAIL("allreduce %d: element %d is %g", n, i, out[i]);
	free(in);
	free(out);
}

static void
alltoall(int per)
{
	int *snd = malloc((size_t)per * size * sizeof(int));
	int *rcv = malloc((size_t)per * size * sizeof(int));
	int p, i;

	if (snd == NULL || rcv == NULL)
		FAIL("malloc");
	for (p = 0; p < size; p++)
		for (i = 0; i < per; i++)
			snd[p * per + i] = rank * 1000000 + p * 1000 + i % 1000;
	MPI_Alltoall(snd, per, MPI_INT, rcv, per, MPI_INT, MPI_COMM_WORLD);
	for (p = 0; p < size; p++)
		for (i = 0; i < per; i++)
			if (rcv[p * per + i] != p * 1000000 + rank * 1000 +
						i % 1000)
				FAIL("alltoall %d: from %d element %d", per, p,
				     i);
	free(snd);
	free(rcv);
}

int
main(int argc, char **argv)
{
	size_t len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2)
		FAIL("needs 2 ranks, has %d", size);
	for (len = 1; len <= (4u << 20); len *= 4)
		pingpong(len, len < 65536 ? 20 : 4);
	allreduce(1);
	allreduce(1 << 20);
	alltoall(1);
	alltoall(1 << 16);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("MPI OK: %d ranks, ping-pong 1 B .. 4 MiB, allreduce, "
		       "alltoall\n", size);
	MPI_Finalize();
	return 0;
}
