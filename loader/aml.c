// SPDX-License-Identifier: MIT
/*
 * AML encodings (ACPI 6.3): 20.2.2 name objects, 20.2.3 data objects,
 * 20.2.4 PkgLength, 20.2.5 term objects; 6.4.2 small resource items.
 */
#include <string.h>

#include "loader/aml.h"

#define AML_ZERO_OP 0x00
#define AML_ONE_OP 0x01
#define AML_NAME_OP 0x08
#define AML_BYTE_PREFIX 0x0a
#define AML_WORD_PREFIX 0x0b
#define AML_DWORD_PREFIX 0x0c
#define AML_QWORD_PREFIX 0x0e
#define AML_SCOPE_OP 0x10
#define AML_BUFFER_OP 0x11
#define AML_PACKAGE_OP 0x12
#define AML_DUAL_NAME_PREFIX 0x2e
#define AML_MULTI_NAME_PREFIX 0x2f
#define AML_EXT_OP_PREFIX 0x5b
#define AML_DEVICE_OP 0x82 /* after AML_EXT_OP_PREFIX */
#define AML_ROOT_CHAR '\\'
#define AML_NAME_SEG_LEN 4
/* MultiNamePrefix holds the segment count in one byte. */
#define AML_MAX_SEGS 255

/* 6.4.2: small item byte 0 is (item name << 3) | length of what follows */
#define RES_IRQ_NO_FLAGS 0x22 /* IRQ descriptor, 2 bytes: the mask only */
#define RES_IO 0x47 /* I/O port descriptor, 7 bytes */
#define RES_IO_DECODE16 0x01
#define RES_END_TAG 0x79 /* end tag, 1 byte: the checksum */
#define RES_IRQ_LIMIT 16 /* the IRQ descriptor's mask covers IRQ 0-15 */

/* 20.2.4: a PkgLength of 1 byte holds 6 bits; 2, 3, 4 bytes 12, 20, 28. */
#define PKG_LENGTH_MAX_BYTES 4
#define PKG_LENGTH_1_MAX 0x3f

void aml_init(struct aml *a, void *buf, size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->buf = buf;
	a->cap = cap;
}

long aml_finish(const struct aml *a)
{
	return a->failed || a->depth ? -1 : (long)a->len;
}

static void put(struct aml *a, const void *p, size_t n)
{
	if (a->failed || n > a->cap - a->len) {
		a->failed = true;
		return;
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

static void put_byte(struct aml *a, uint8_t b)
{
	put(a, &b, 1);
}

/* Makes room for n bytes at `at` by moving what follows up. */
static void insert(struct aml *a, size_t at, const uint8_t *p, size_t n)
{
	if (a->failed || n > a->cap - a->len) {
		a->failed = true;
		return;
	}
	memmove(a->buf + at + n, a->buf + at, a->len - at);
	memcpy(a->buf + at, p, n);
	a->len += n;
}

static bool seg_char_ok(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/* NameString: root prefix, then one, two (DualName) or more (MultiName)
 * NameSegs, each padded with '_' to 4 characters. */
static void put_name(struct aml *a, const char *path)
{
	uint8_t segs[AML_MAX_SEGS][AML_NAME_SEG_LEN];
	unsigned n = 0;

	if (*path == AML_ROOT_CHAR) {
		put_byte(a, AML_ROOT_CHAR);
		path++;
	}
	while (*path && !a->failed) {
		size_t len = strcspn(path, ".");

		if (len == 0 || len > AML_NAME_SEG_LEN || n == AML_MAX_SEGS) {
			a->failed = true;
			return;
		}
		memset(segs[n], '_', AML_NAME_SEG_LEN);
		for (size_t i = 0; i < len; i++) {
			if (!seg_char_ok(path[i], i == 0))
				a->failed = true;
			segs[n][i] = (uint8_t)path[i];
		}
		n++;
		path += len;
		if (*path == '.' && !*++path)
			a->failed = true; /* a trailing dot */
	}
	if (n == 0)
		a->failed = true;
	if (n == 2)
		put_byte(a, AML_DUAL_NAME_PREFIX);
	else if (n > 2) {
		put_byte(a, AML_MULTI_NAME_PREFIX);
		put_byte(a, (uint8_t)n);
	}
	put(a, segs, n * AML_NAME_SEG_LEN);
}

static void open_term(struct aml *a, bool is_buffer)
{
	if (a->failed || a->depth == AML_MAX_DEPTH) {
		a->failed = true;
		return;
	}
	a->open_buffer[a->depth] = is_buffer;
	a->open[a->depth++] = a->len;
}

void aml_scope_open(struct aml *a, const char *path)
{
	put_byte(a, AML_SCOPE_OP);
	open_term(a, false);
	put_name(a, path);
}

void aml_device_open(struct aml *a, const char *path)
{
	put_byte(a, AML_EXT_OP_PREFIX);
	put_byte(a, AML_DEVICE_OP);
	open_term(a, false);
	put_name(a, path);
}

void aml_package_open(struct aml *a, uint8_t nr_elements)
{
	put_byte(a, AML_PACKAGE_OP);
	open_term(a, false);
	put_byte(a, nr_elements);
}

void aml_buffer_open(struct aml *a)
{
	put_byte(a, AML_BUFFER_OP);
	open_term(a, true);
}

/* The integer's encoding into out (at most 9 bytes); its length. */
static size_t encode_integer(uint64_t v, uint8_t out[9])
{
	size_t n;

	if (v == 0 || v == 1) {
		out[0] = v ? AML_ONE_OP : AML_ZERO_OP;
		return 1;
	}
	if (v <= UINT8_MAX) {
		out[0] = AML_BYTE_PREFIX;
		n = 1;
	} else if (v <= UINT16_MAX) {
		out[0] = AML_WORD_PREFIX;
		n = 2;
	} else if (v <= UINT32_MAX) {
		out[0] = AML_DWORD_PREFIX;
		n = 4;
	} else {
		out[0] = AML_QWORD_PREFIX;
		n = 8;
	}
	for (size_t i = 0; i < n; i++)
		out[1 + i] = (uint8_t)(v >> (8 * i));
	return 1 + n;
}

/* PkgLength counts its own bytes and the body's (20.2.4). */
static size_t encode_pkg_length(size_t body, uint8_t out[PKG_LENGTH_MAX_BYTES])
{
	size_t total;

	if (body + 1 <= PKG_LENGTH_1_MAX) {
		out[0] = (uint8_t)(body + 1);
		return 1;
	}
	for (size_t n = 2; n <= PKG_LENGTH_MAX_BYTES; n++) {
		total = body + n;
		if (total >> (4 + 8 * (n - 1)))
			continue;
		/* byte 0: bits 7:6 the count of bytes after it, 3:0 the
		 * length's low nibble; then the rest, 8 bits a byte */
		out[0] = (uint8_t)(((n - 1) << 6) | (total & 0xf));
		for (size_t i = 1; i < n; i++)
			out[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
		return n;
	}
	return 0;
}

void aml_close(struct aml *a)
{
	uint8_t prefix[PKG_LENGTH_MAX_BYTES + 9];
	uint8_t size[9];
	size_t at, body, n, size_len = 0;

	if (a->failed || a->depth == 0) {
		a->failed = true;
		return;
	}
	at = a->open[--a->depth];
	body = a->len - at;
	if (a->open_buffer[a->depth]) {
		size_len = encode_integer(body, size);
		body += size_len;
	}
	n = encode_pkg_length(body, prefix);
	if (n == 0) {
		a->failed = true;
		return;
	}
	memcpy(prefix + n, size, size_len);
	insert(a, at, prefix, n + size_len);
}

void aml_name(struct aml *a, const char *path)
{
	put_byte(a, AML_NAME_OP);
	put_name(a, path);
}

void aml_integer(struct aml *a, uint64_t value)
{
	uint8_t enc[9];

	put(a, enc, encode_integer(value, enc));
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The EISA ID's 32 bits, most significant first: 0, three 5-bit letters
 * ('A' is 1), four 4-bit hex digits; AML stores it as a DWordConst whose
 * bytes are in that order, i.e. byte-swapped.
 */
void aml_eisa_id(struct aml *a, const char *id)
{
	uint32_t v = 0;

	if (strlen(id) != 7) {
		a->failed = true;
		return;
	}
	for (int i = 0; i < 3; i++) {
		if (id[i] < 'A' || id[i] > 'Z')
			a->failed = true;
		v = v << 5 | (uint32_t)(id[i] - '@');
	}
	for (int i = 3; i < 7; i++) {
		int d = hex_digit(id[i]);

		if (d < 0)
			a->failed = true;
		v = v << 4 | (uint32_t)(d & 0xf);
	}
	put_byte(a, AML_DWORD_PREFIX);
	put_byte(a, (uint8_t)(v >> 24));
	put_byte(a, (uint8_t)(v >> 16));
	put_byte(a, (uint8_t)(v >> 8));
	put_byte(a, (uint8_t)v);
}

void aml_byte(struct aml *a, uint8_t b)
{
	put_byte(a, b);
}

void aml_io16(struct aml *a, uint16_t min, uint16_t max, uint8_t align,
	      uint8_t len)
{
	uint8_t d[] = {
		RES_IO,		 RES_IO_DECODE16, (uint8_t)min, (uint8_t)(min >> 8),
		(uint8_t)max, (uint8_t)(max >> 8), align,	len,
	};

	put(a, d, sizeof(d));
}

void aml_irq_no_flags(struct aml *a, uint8_t irq)
{
	uint16_t mask = (uint16_t)(1u << (irq % RES_IRQ_LIMIT));

	if (irq >= RES_IRQ_LIMIT)
		a->failed = true;
	put_byte(a, RES_IRQ_NO_FLAGS);
	put_byte(a, (uint8_t)mask);
	put_byte(a, (uint8_t)(mask >> 8));
}

void aml_end_tag(struct aml *a)
{
	put_byte(a, RES_END_TAG);
	put_byte(a, 0);
}
