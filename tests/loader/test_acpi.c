// SPDX-License-Identifier: MIT
/*
 * acpi_write_tables: the RSDP, XSDT and MADT an OS finds from
 * hvm_start_info.rsdp_paddr, read back here the way an OS reads them, by
 * the byte offsets of ACPI 6.3 section 5.2 (not through acpi.c's structs):
 * signatures, lengths, both RSDP checksums and each table's, the pointers
 * from one table to the next, and one enabled Processor Local APIC entry
 * per vCPU with UID = APIC ID = index. Nothing lands outside the area.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lull_abi.h"
#include "acpi.h"

#define RAM_SIZE (2ull << 20)

static uint8_t *ram;

static void ram_setup(void)
{
	ram = calloc(1, RAM_SIZE);
	cr_assert(ram);
}

static void ram_teardown(void)
{
	free(ram);
}

TestSuite(acpi, .init = ram_setup, .fini = ram_teardown);

static uint32_t u32_at(uint64_t gpa)
{
	uint32_t v;

	memcpy(&v, ram + gpa, sizeof(v));
	return v;
}

static uint64_t u64_at(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, ram + gpa, sizeof(v));
	return v;
}

static uint8_t sum(uint64_t gpa, uint64_t len)
{
	uint8_t s = 0;

	for (uint64_t i = 0; i < len; i++)
		s += ram[gpa + i];
	return s;
}

static bool zero_outside(uint64_t from, uint64_t to)
{
	for (uint64_t a = 0; a < RAM_SIZE; a++)
		if ((a < from || a >= to) && ram[a])
			return false;
	return true;
}

static uint64_t write_tables(unsigned int nr_vcpus)
{
	char err[256] = "";
	int64_t rsdp =
		acpi_write_tables(ram, RAM_SIZE, nr_vcpus, err, sizeof(err));

	cr_assert_eq(rsdp, LULL_ACPI_RSDP_GPA, "returned %ld: %s", (long)rsdp,
		     err);
	return (uint64_t)rsdp;
}

/* A system description table header (ACPI 6.3 table 5-29); its length. */
static uint32_t check_header(uint64_t gpa, const char *sig, uint8_t revision)
{
	uint32_t len = u32_at(gpa + 4);

	cr_assert_eq(memcmp(ram + gpa, sig, 4), 0, "signature at 0x%lx",
		     (unsigned long)gpa);
	cr_assert_geq(len, 36);
	cr_assert_leq(gpa + len, LULL_ACPI_AREA_END, "%s runs past the area",
		      sig);
	cr_expect_eq(ram[gpa + 8], revision, "%s revision", sig);
	cr_expect_eq(sum(gpa, len), 0, "%s checksum", sig);
	cr_expect_eq(memcmp(ram + gpa + 10, "LULL  ", 6), 0, "%s OEM ID", sig);
	return len;
}

/* The RSDP (table 5-27) and the XSDT's one entry: the MADT's address. */
static uint64_t check_rsdp_xsdt(uint64_t rsdp)
{
	uint64_t xsdt;
	uint32_t len;

	cr_assert_eq(memcmp(ram + rsdp, "RSD PTR ", 8), 0);
	cr_expect_eq(rsdp % 16, 0, "the RSDP sits on a 16-byte boundary");
	cr_expect_eq(sum(rsdp, 20), 0, "RSDP checksum (first 20 bytes)");
	cr_expect_eq(ram[rsdp + 15], 2, "RSDP revision");
	cr_expect_eq(u32_at(rsdp + 16), 0, "no RSDT");
	cr_assert_eq(u32_at(rsdp + 20), 36, "RSDP length");
	cr_expect_eq(sum(rsdp, 36), 0, "RSDP extended checksum");
	cr_expect_eq(memcmp(ram + rsdp + 9, "LULL  ", 6), 0, "RSDP OEM ID");

	xsdt = u64_at(rsdp + 24);
	cr_assert_geq(xsdt, rsdp + 36);
	len = check_header(xsdt, "XSDT", 1);
	cr_assert_eq(len, 36 + 8, "the XSDT lists one table");
	return u64_at(xsdt + 36);
}

/* The MADT (table 5-43) and its Processor Local APIC entries (5-46). */
static void check_madt(uint64_t madt, unsigned int nr_vcpus)
{
	unsigned int want = nr_vcpus < 255 ? nr_vcpus : 255;
	uint32_t len = check_header(madt, "APIC", 5);
	uint64_t p = madt + 44;
	unsigned int n = 0;

	cr_expect_eq(u32_at(madt + 36), 0xfee00000u, "local APIC address");
	cr_expect_eq(u32_at(madt + 40), 0, "flags: no PCAT_COMPAT");
	cr_assert_eq(len, 44 + 8 * want);
	while (p < madt + len) {
		cr_assert_eq(ram[p], 0, "entry %u type", n);
		cr_assert_eq(ram[p + 1], 8, "entry %u length", n);
		cr_expect_eq(ram[p + 2], n, "entry %u processor UID", n);
		cr_expect_eq(ram[p + 3], n, "entry %u APIC ID", n);
		cr_expect_eq(u32_at(p + 4), 1, "entry %u flags: enabled", n);
		p += ram[p + 1];
		n++;
	}
	cr_expect_eq(n, want);
}

static void check_tables(unsigned int nr_vcpus)
{
	uint64_t rsdp = write_tables(nr_vcpus);

	check_madt(check_rsdp_xsdt(rsdp), nr_vcpus);
	cr_expect(zero_outside(LULL_ACPI_RSDP_GPA, LULL_ACPI_AREA_END),
		  "a byte written outside the ACPI area");
}

Test(acpi, one_vcpu)
{
	check_tables(1);
}

Test(acpi, two_vcpus)
{
	check_tables(2);
}

/* APIC ID 255 has no type 0 entry: the 256th vCPU is left out. */
Test(acpi, most_vcpus)
{
	check_tables(255);
	memset(ram, 0, RAM_SIZE);
	check_tables(256);
}

Test(acpi, bad_input_writes_nothing)
{
	char err[256] = "";

	cr_expect_eq(acpi_write_tables(ram, RAM_SIZE, 0, err, sizeof(err)),
		     -EINVAL);
	cr_expect(strstr(err, "vCPUs"), "message: %s", err);
	cr_expect_eq(acpi_write_tables(ram, RAM_SIZE, 257, err, sizeof(err)),
		     -EINVAL);
	cr_expect_eq(acpi_write_tables(ram, LULL_ACPI_AREA_END - 1, 1, err,
				       sizeof(err)),
		     -ERANGE);
	cr_expect(strstr(err, "ACPI area"), "message: %s", err);
	cr_expect(zero_outside(0, 0));
}
