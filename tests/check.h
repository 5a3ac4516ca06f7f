/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_CHECK_H
#define DPIB_CHECK_H

/* A small assertion kit: a failed CHECK names the rule and stops the test. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unused in a file of several that make one test program. */
static int check_passed __attribute__((unused));
static int check_failed __attribute__((unused));
static const char *check_current = "(none)";

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s: %s:%d: %s: ", check_current, \
			__FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		exit(1); \
	} \
} while (0)

#define RUN(fn) do { \
	check_current = #fn; \
	fn(); \
	check_passed++; \
	printf("ok %d - %s\n", check_passed, #fn); \
	fflush(stdout); \
} while (0)

/*
 * The test cannot run here (a tool missing): say why and exit 77, which
 * meson reports as SKIP, never as a pass.
 */
#define CHECK_SKIP(...) do { \
	printf("SKIP: "); \
	printf(__VA_ARGS__); \
	printf("\n"); \
	fflush(stdout); \
	exit(77); \
} while (0)

#define CHECK_DONE() do { \
	printf("%d passed, %d failed\n", check_passed, check_failed); \
	return check_failed ? 1 : 0; \
} while (0)

static inline double
check_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif /* DPIB_CHECK_H */
