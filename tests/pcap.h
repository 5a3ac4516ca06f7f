/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_TEST_PCAP_H
#define DPIB_TEST_PCAP_H

/*
 * Just enough of the classic libpcap file format to replay captured frames
 * in tests, so the fast suite needs no libpcap. The whole file is read into
 * memory: vector files are small and records can then be handed out as
 * pointers that stay valid until pcap_close().
 *
 * Layout: a 24-byte global header (magic, version 2.4, thiszone, sigfigs,
 * snaplen, linktype) then records of a 16-byte header (ts_sec, ts_frac,
 * caplen, origlen) followed by caplen bytes. The writer's byte order is
 * whichever makes the magic read as 0xa1b2c3d4 (microsecond timestamps) or
 * 0xa1b23c4d (nanosecond timestamps).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCAP_MAGIC_US		0xa1b2c3d4u
#define PCAP_MAGIC_NS		0xa1b23c4du
#define PCAP_GLOBAL_HDR_LEN	24
#define PCAP_REC_HDR_LEN	16
#define PCAP_LINKTYPE_ETHERNET	1

struct pcap_file {
	uint8_t *buf;
	size_t len;
	size_t pos;		/* next record header */
	int swapped;		/* written in the other byte order */
	int nsec;
	uint32_t snaplen;
	uint32_t linktype;
};

static inline uint32_t
pcap_u32(const struct pcap_file *pf, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return pf->swapped ? __builtin_bswap32(v) : v;
}

static inline uint16_t
pcap_u16(const struct pcap_file *pf, const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return pf->swapped ? __builtin_bswap16(v) : v;
}

static inline void
pcap_close(struct pcap_file *pf)
{
	free(pf->buf);
	memset(pf, 0, sizeof(*pf));
}

/* 0, or -errno: -EINVAL when the file is not a classic pcap. */
static inline int
pcap_open(struct pcap_file *pf, const char *path)
{
	uint32_t magic;
	long size;
	FILE *f;
	int err = 0;

	memset(pf, 0, sizeof(*pf));
	f = fopen(path, "rb");
	if (f == NULL)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		err = -errno;
		goto out;
	}
	if (size < PCAP_GLOBAL_HDR_LEN) {
		err = -EINVAL;
		goto out;
	}
	pf->buf = malloc(size);
	if (pf->buf == NULL) {
		err = -ENOMEM;
		goto out;
	}
	if (fread(pf->buf, 1, size, f) != (size_t)size) {
		err = -EIO;
		goto out;
	}
	pf->len = size;

	memcpy(&magic, pf->buf, sizeof(magic));
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS) {
		pf->swapped = 0;
	} else if (__builtin_bswap32(magic) == PCAP_MAGIC_US ||
		   __builtin_bswap32(magic) == PCAP_MAGIC_NS) {
		pf->swapped = 1;
		magic = __builtin_bswap32(magic);
	} else {
		err = -EINVAL;
		goto out;
	}
	pf->nsec = magic == PCAP_MAGIC_NS;
	/* Version 2.4 is the only one written since the 1990s. */
	if (pcap_u16(pf, pf->buf + 4) != 2) {
		err = -EINVAL;
		goto out;
	}
	pf->snaplen = pcap_u32(pf, pf->buf + 16);
	pf->linktype = pcap_u32(pf, pf->buf + 20);
	pf->pos = PCAP_GLOBAL_HDR_LEN;
out:
	fclose(f);
	if (err != 0)
		pcap_close(pf);
	return err;
}

/*
 * Hand out the next record: 1 with *data and *caplen set, 0 at the end of
 * the file, -EINVAL when a record is cut short (a truncated capture must
 * not pass for a shorter one).
 */
static inline int
pcap_next(struct pcap_file *pf, const uint8_t **data, uint32_t *caplen)
{
	const uint8_t *hdr;
	uint32_t len;

	if (pf->pos == pf->len)
		return 0;
	if (pf->len - pf->pos < PCAP_REC_HDR_LEN)
		return -EINVAL;
	hdr = pf->buf + pf->pos;
	len = pcap_u32(pf, hdr + 8);
	if (len > pf->len - pf->pos - PCAP_REC_HDR_LEN)
		return -EINVAL;
	*data = hdr + PCAP_REC_HDR_LEN;
	*caplen = len;
	pf->pos += PCAP_REC_HDR_LEN + len;
	return 1;
}

#endif /* DPIB_TEST_PCAP_H */
