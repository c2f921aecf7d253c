// SPDX-License-Identifier: MIT
/*
 * The AML emitter (loader/aml.c) against the encodings of ACPI 6.3 section
 * 20: integers in their shortest form, name strings (root, dual and multi
 * name prefixes, '_' padding), PkgLength in one byte and in several at its
 * boundaries, Buffer's size, and misuse that must fail without writing
 * past the buffer.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "loader/aml.h"

static uint8_t buf[4096];

static struct aml start(size_t cap)
{
	struct aml a;

	memset(buf, 0xaa, sizeof(buf));
	aml_init(&a, buf, cap);
	return a;
}

#define EXPECT_BYTES(a, ...)                                               \
	do {                                                               \
		const uint8_t want[] = { __VA_ARGS__ };                    \
		cr_assert_eq(aml_finish(&(a)), (long)sizeof(want));        \
		cr_expect_eq(memcmp(buf, want, sizeof(want)), 0, "bytes"); \
	} while (0)

Test(aml, integers_shortest)
{
	struct aml a = start(sizeof(buf));

	aml_integer(&a, 0);
	aml_integer(&a, 1);
	aml_integer(&a, 2);
	aml_integer(&a, 0x100);
	aml_integer(&a, 0x10000);
	aml_integer(&a, 1ull << 32);
	EXPECT_BYTES(a, 0x00, 0x01, 0x0a, 2, 0x0b, 0, 1, 0x0c, 0, 0, 1, 0,
		     0x0e, 0, 0, 0, 0, 1, 0, 0, 0);
}

Test(aml, names)
{
	struct aml a = start(sizeof(buf));

	aml_name(&a, "_S5");
	aml_name(&a, "\\_SB.COM1");
	aml_name(&a, "A.B2.C");
	EXPECT_BYTES(a, 0x08, '_', 'S', '5', '_', 0x08, '\\', 0x2e, '_', 'S',
		     'B', '_', 'C', 'O', 'M', '1', 0x08, 0x2f, 3, 'A', '_',
		     '_', '_', 'B', '2', '_', '_', 'C', '_', '_', '_');
}

Test(aml, eisa_id)
{
	struct aml a = start(sizeof(buf));

	aml_eisa_id(&a, "PNP0501");
	EXPECT_BYTES(a, 0x0c, 0x41, 0xd0, 0x05, 0x01);
}

/* A package of n Zero elements: its PkgLength bytes. */
static void package_of(unsigned n, size_t pkg_len_bytes, size_t total)
{
	struct aml a = start(sizeof(buf));

	aml_package_open(&a, (uint8_t)n);
	for (unsigned i = 0; i < n; i++)
		aml_integer(&a, 0);
	aml_close(&a);
	cr_assert_eq(aml_finish(&a), (long)(1 + pkg_len_bytes + 1 + n));
	cr_expect_eq(buf[0], 0x12);
	if (pkg_len_bytes == 1) {
		cr_expect_eq(buf[1], total);
	} else {
		cr_expect_eq(buf[1] >> 6, pkg_len_bytes - 1);
		cr_expect_eq(buf[1] & 0xf, total & 0xf);
		cr_expect_eq(buf[2], (total >> 4) & 0xff);
	}
	cr_expect_eq(buf[1 + pkg_len_bytes], n, "NumElements");
}

Test(aml, pkg_length_boundaries)
{
	/* 1 + 61 elements + NumElements = 63: the one-byte maximum */
	package_of(61, 1, 63);
	package_of(62, 2, 65);
	package_of(200, 2, 203);
}

Test(aml, buffer_size_then_bytes)
{
	struct aml a = start(sizeof(buf));

	aml_buffer_open(&a);
	aml_irq_no_flags(&a, 4);
	aml_end_tag(&a);
	aml_close(&a);
	EXPECT_BYTES(a, 0x11, 8, 0x0a, 5, 0x22, 0x10, 0x00, 0x79, 0x00);
}

Test(aml, misuse_fails)
{
	const char *bad[] = { "", "TOOLONG", "_S5.", "lower", "\\", "1ABC",
			      "A..B" };
	struct aml a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = start(sizeof(buf));
		aml_name(&a, bad[i]);
		cr_expect_eq(aml_finish(&a), -1, "name \"%s\"", bad[i]);
	}
	a = start(sizeof(buf));
	aml_close(&a);
	cr_expect_eq(aml_finish(&a), -1, "a close with nothing open");
	a = start(sizeof(buf));
	aml_scope_open(&a, "\\_SB");
	cr_expect_eq(aml_finish(&a), -1, "a scope left open");
	a = start(sizeof(buf));
	aml_eisa_id(&a, "pnp0501");
	cr_expect_eq(aml_finish(&a), -1, "a lower-case EISA ID");
	a = start(sizeof(buf));
	aml_irq_no_flags(&a, 16);
	cr_expect_eq(aml_finish(&a), -1, "IRQ 16 in an ISA IRQ descriptor");
	a = start(sizeof(buf));
	for (int i = 0; i <= AML_MAX_DEPTH; i++)
		aml_package_open(&a, 0);
	cr_expect_eq(aml_finish(&a), -1, "nesting too deep");
}

/* A full buffer fails and nothing lands past its end, even where a close
 * must insert its PkgLength. */
Test(aml, stays_inside_the_buffer)
{
	for (size_t cap = 0; cap < 24; cap++) {
		struct aml a = start(cap);

		aml_scope_open(&a, "\\_SB");
		aml_name(&a, "_UID");
		aml_integer(&a, 0x12345678);
		aml_close(&a);
		cr_expect_eq(aml_finish(&a), cap >= 17 ? 17 : -1, "cap %zu",
			     cap);
		for (size_t i = cap; i < sizeof(buf); i++)
			cr_assert_eq(buf[i], 0xaa, "cap %zu: byte %zu written",
				     cap, i);
	}
}
