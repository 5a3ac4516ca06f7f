/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Registered memory and the process's address space.
 *
 * A kernel HCA pins the pages of an MR: whatever the application later does
 * to the mapping, DMA reaches the pages that were registered and nothing
 * else. dpib copies with the CPU through the application's own mappings, so
 * it keeps the promise the other way round:
 *  - registration fails with EFAULT unless the whole range is mapped, and
 *    mapped writable when the MR asks for any write access;
 *  - a registered range that is unmapped, remapped, mapped over (MAP_FIXED)
 *    or discarded (MADV_DONTNEED, MADV_FREE, MADV_REMOVE) is noticed before
 *    the kernel changes it, and every MR over it dies: remote access is
 *    NAKed, local access fails with a protection error, and no byte ever
 *    reaches what is mapped there afterwards. The engine is quiesced before
 *    the change goes ahead, so no copy is under way when the pages go.
 *
 * A munmap on EAL's interrupt thread also waits for the engines to pass a
 * quiescent point (ib_engine_unmap_fence): a memif port's shared memory is
 * unmapped there when its peer leaves.
 *
 * Noticing: libc's munmap, mremap, madvise and mmap are redirected to the
 * wrappers below by a jump written over their first instructions (the way
 * UCX's memory hooks keep registration caches coherent), so calls from
 * every library, libc's own malloc and free included, pass through here;
 * the wrappers make the system call themselves. Not seen: system calls
 * made directly (syscall(2), inline assembly), brk(2) trims of the heap,
 * shmdt(2), and another process changing shared memory. DPIB_MEMHOOKS=0
 * leaves libc alone (for tools that rewrite code, such as valgrind); the
 * registration checks stay.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <rte_spinlock.h>

#include "ib_hca.h"

/*
 * Every live MR with a non-empty range, and the hull of their ranges for a
 * quick "not ours" answer to the munmap calls of the rest of the process.
 */
static struct {
	rte_spinlock_t lock;
	struct ib_mr **mr;
	uint32_t n, cap;
	uintptr_t lo, hi;
} reg = { .lock = RTE_SPINLOCK_INITIALIZER };

static int hooks_on;
static int exiting;		/* the engine stopped: nothing to protect */

/* The range an MR's registry entry covers (a rereg may widen it). */
static inline int
overlaps(const struct ib_mr *mr, uintptr_t lo, uintptr_t hi)
{
	return mr->hook_lo < mr->hook_hi && mr->hook_lo < hi &&
	       lo < mr->hook_hi;
}

static void
hull_update(void)
{
	uint32_t i;

	reg.lo = UINTPTR_MAX;
	reg.hi = 0;
	for (i = 0; i < reg.n; i++) {
		if (reg.mr[i]->hook_lo == reg.mr[i]->hook_hi)
			continue;
		reg.lo = RTE_MIN(reg.lo, reg.mr[i]->hook_lo);
		reg.hi = RTE_MAX(reg.hi, reg.mr[i]->hook_hi);
	}
}

/*
 * [lo, hi) is about to change: every MR over it dies, and each engine that
 * may be copying into one passes a quiescent point before this returns.
 */
static void
ranges_die(uintptr_t lo, uintptr_t hi)
{
	struct ib_dev *devs[8];
	uint32_t i, j, ndev = 0;
	int all = 0;

	if (__atomic_load_n(&reg.n, __ATOMIC_ACQUIRE) == 0 || lo >= hi ||
	    __atomic_load_n(&exiting, __ATOMIC_ACQUIRE))
		return;
	rte_spinlock_lock(&reg.lock);
	if (hi <= reg.lo || lo >= reg.hi) {
		rte_spinlock_unlock(&reg.lock);
		return;
	}
	for (i = 0; i < reg.n; i++) {
		struct ib_mr *mr = reg.mr[i];

		if (!overlaps(mr, lo, hi))
			continue;
		__atomic_store_n(&mr->dead, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&mr->deaths, 1, __ATOMIC_RELEASE);
		for (j = 0; j < ndev && devs[j] != mr->dev; j++)
			;
		if (j < ndev)
			continue;
		if (ndev < RTE_DIM(devs))
			devs[ndev++] = mr->dev;
		else
			all = 1;
	}
	rte_spinlock_unlock(&reg.lock);
	/* The devices share their engine; waiting on each is cheap. */
	for (i = 0; i < ndev; i++)
		ib_engine_quiesce(devs[i]);
	if (all)
		ib_engine_quiesce(devs[0]);
}

static int
hook_munmap(void *addr, size_t len)
{
	ranges_die((uintptr_t)addr, (uintptr_t)addr + len);
	if (!__atomic_load_n(&exiting, __ATOMIC_ACQUIRE))
		ib_engine_unmap_fence();	/* a port's memory, maybe */
	return (int)syscall(SYS_munmap, addr, len);
}

static void *
hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	/* MAP_FIXED replaces what was there; MAP_FIXED_NOREPLACE never does. */
	if (flags & MAP_FIXED)
		ranges_die((uintptr_t)addr, (uintptr_t)addr + len);
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

/*
 * The old range may move or shrink; even a mapping grown in place is
 * counted as changed (conservative). MREMAP_FIXED replaces the target.
 */
static void *
hook_mremap(void *old, size_t old_len, size_t new_len, int flags,
	    void *new_addr)
{
	ranges_die((uintptr_t)old, (uintptr_t)old + old_len);
	if (flags & MREMAP_FIXED)
		ranges_die((uintptr_t)new_addr, (uintptr_t)new_addr + new_len);
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags,
			       new_addr);
}

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED	24
#endif

static int
hook_madvise(void *addr, size_t len, int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_DONTNEED_LOCKED:
	case MADV_FREE:
	case MADV_REMOVE:
		ranges_die((uintptr_t)addr, (uintptr_t)addr + len);
		break;
	default:
		break;
	}
	return (int)syscall(SYS_madvise, addr, len, advice);
}

#if defined(__x86_64__)
#define JMP_LEN	14	/* jmp *0(%rip) and the 8-byte target */

/*
 * Send every call of libc's @name to @to: its first bytes become an
 * absolute jump. libc's syscall wrappers are longer than the jump and are
 * never entered past their start, and the wrapper never returns into them.
 */
static int
patch(void *libc, const char *name, void *to)
{
	static const uint8_t jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *fn = dlsym(libc, name);
	uintptr_t page;
	size_t span;

	if (fn == NULL)
		return -ENOENT;
	if (memcmp(fn, jmp, sizeof(jmp)) == 0)
		return -EEXIST;	/* another copy of dpib got there first */
	/* Only a function that makes its system call itself. */
	if (memmem(fn, 64, "\x0f\x05", 2) == NULL)
		return -ENOTSUP;
	page = (uintptr_t)fn & ~(uintptr_t)(pg - 1);
	span = RTE_ALIGN_CEIL((uintptr_t)fn + JMP_LEN - page, (size_t)pg);
	if (mprotect((void *)page, span, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	memcpy(fn, jmp, sizeof(jmp));
	memcpy(fn + sizeof(jmp), &to, sizeof(to));
	__builtin___clear_cache((char *)fn, (char *)fn + JMP_LEN);
	mprotect((void *)page, span, PROT_READ | PROT_EXEC);
	return 0;
}

static void
hooks_install(void)
{
	static const struct {
		const char *name;
		void *to;
	} hooks[] = {
		{ "munmap", (void *)hook_munmap },
		{ "mmap", (void *)hook_mmap },
		{ "mmap64", (void *)hook_mmap },
		{ "mremap", (void *)hook_mremap },
		{ "madvise", (void *)hook_madvise },
	};
	const char *env = getenv("DPIB_MEMHOOKS");
	void *libc;
	uint32_t i;
	int err, ok = 1;

	if (env != NULL && strcmp(env, "0") == 0)
		return;
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (libc == NULL) {
		IB_LOG(WARNING, "libc not found: unmapping registered memory is not tracked");
		return;
	}
	for (i = 0; i < RTE_DIM(hooks); i++) {
		/* mmap64 is mmap on LP64 libcs: patched once already. */
		if (i > 0 && dlsym(libc, hooks[i].name) ==
			     dlsym(libc, hooks[i - 1].name))
			continue;
		err = patch(libc, hooks[i].name, hooks[i].to);
		if (err != 0) {
			IB_LOG(WARNING, "cannot hook %s (%s): unmapping registered memory is not tracked",
			       hooks[i].name, strerror(-err));
			ok = 0;
		}
	}
	dlclose(libc);
	hooks_on = ok;
}
#else
static void
hooks_install(void)
{
	IB_LOG(WARNING, "no memory hooks on this architecture");
}
#endif

/*
 * The process is exiting and the engine has stopped: no copy can run any
 * more, and the MRs' own memory may be torn down under the table, so the
 * wrappers only make their system calls from now on.
 */
void
ib_mem_exiting(void)
{
	__atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
}

/* Were libc's memory calls redirected (tests ask before relying on it)? */
int
ib_mem_hooked(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, hooks_install);
	return hooks_on;
}

/*
 * Is [lo, hi) mapped, readable, and writable when @write? The kernel's
 * answer from /proc/self/maps: registration is a control-path call.
 */
int
ib_mem_mapped(uintptr_t lo, uintptr_t hi, int write)
{
	FILE *f = fopen("/proc/self/maps", "re");
	uintptr_t cur = lo, a, b;
	char *line = NULL, perms[8];
	size_t cap = 0;

	if (f == NULL)
		return 0;
	while (cur < hi && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3 || b <= cur)
			continue;
		if (a > cur || perms[0] != 'r' || (write && perms[1] != 'w'))
			break;		/* a hole, or not the rights asked */
		cur = b;
	}
	free(line);
	fclose(f);
	return cur >= hi;
}

/*
 * Watch @mr's range from now on. The table grows outside the lock: malloc
 * and free may call mmap, mremap and munmap, which come back here.
 */
int
ib_mem_track(struct ib_mr *mr)
{
	ib_mem_hooked();
	mr->hook_lo = (uintptr_t)mr->addr;
	mr->hook_hi = (uintptr_t)mr->addr + mr->length;
	rte_spinlock_lock(&reg.lock);
	while (reg.n == reg.cap) {
		uint32_t cap = reg.cap ? reg.cap * 2 : 64;
		struct ib_mr **grown, **old = NULL;

		rte_spinlock_unlock(&reg.lock);
		grown = malloc(cap * sizeof(*grown));
		if (grown == NULL)
			return ENOMEM;
		rte_spinlock_lock(&reg.lock);
		if (reg.cap < cap) {
			if (reg.n != 0)
				memcpy(grown, reg.mr, reg.n * sizeof(*grown));
			old = reg.mr;
			reg.mr = grown;
			reg.cap = cap;
			grown = NULL;
		}
		rte_spinlock_unlock(&reg.lock);
		free(old);
		free(grown);
		rte_spinlock_lock(&reg.lock);
	}
	reg.mr[reg.n] = mr;
	__atomic_store_n(&reg.n, reg.n + 1, __ATOMIC_RELEASE);
	hull_update();
	rte_spinlock_unlock(&reg.lock);
	return 0;
}

void
ib_mem_untrack(struct ib_mr *mr)
{
	uint32_t i;

	rte_spinlock_lock(&reg.lock);
	for (i = 0; i < reg.n; i++)
		if (reg.mr[i] == mr) {
			reg.mr[i] = reg.mr[reg.n - 1];
			__atomic_store_n(&reg.n, reg.n - 1, __ATOMIC_RELEASE);
			break;
		}
	hull_update();
	rte_spinlock_unlock(&reg.lock);
}

/* Watch [lo, hi) for @mr from now on, instead of or beside its range. */
void
ib_mem_retrack(struct ib_mr *mr, uintptr_t lo, uintptr_t hi)
{
	rte_spinlock_lock(&reg.lock);
	mr->hook_lo = lo;
	mr->hook_hi = hi;
	hull_update();
	rte_spinlock_unlock(&reg.lock);
}
