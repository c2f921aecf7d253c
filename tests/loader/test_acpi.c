// SPDX-License-Identifier: MIT
/*
 * acpi_write_tables: the RSDP, XSDT, FADT, DSDT and MADT an OS finds from
 * hvm_start_info.rsdp_paddr, read back here the way an OS reads them, by
 * the byte offsets of ACPI 6.3 section 5.2 (not through acpi.c's structs):
 * signatures, lengths, both RSDP checksums and each table's, the pointers
 * from one table to the next, the FADT's hardware-reduced registers, the
 * DSDT's _S5 and COM1 encodings, one enabled Processor Local x2APIC entry
 * per vCPU with UID = x2APIC ID = index and the I/O APIC entry. Nothing
 * lands outside the area. test_acpi_iasl.c has ACPICA's disassembler
 * read the same tables.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "loader/acpi.h"
#include "lull_abi.h"
#include "platform.h"

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

/* The RSDP (table 5-27) and the XSDT's entries: the FADT, the MADT. */
static void check_rsdp_xsdt(uint64_t rsdp, uint64_t *fadt, uint64_t *madt)
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
	cr_assert_eq(len, 36 + 2 * 8, "the XSDT lists two tables");
	*fadt = u64_at(xsdt + 36);
	*madt = u64_at(xsdt + 44);
}

/* A Generic Address Structure (table 5-25): 8-bit SystemIO at port. */
static void check_io_byte_gas(uint64_t gas, uint16_t port, const char *what)
{
	cr_expect_eq(ram[gas], 1, "%s: SystemIO", what);
	cr_expect_eq(ram[gas + 1], 8, "%s: 8 bits wide", what);
	cr_expect_eq(ram[gas + 2], 0, "%s: bit offset", what);
	cr_expect_eq(ram[gas + 3], 1, "%s: byte access", what);
	cr_expect_eq(u64_at(gas + 4), port, "%s: port", what);
}

/* The FADT (table 5-33); returns the DSDT's address. */
static uint64_t check_fadt(uint64_t fadt)
{
	uint32_t len = check_header(fadt, "FACP", 6);
	uint32_t flags = u32_at(fadt + 112);
	uint16_t boot;

	cr_assert_eq(len, 276, "the ACPI 6 FADT's length");
	cr_expect_eq(ram[fadt + 131], 3, "FADT minor version");
	cr_expect(flags & (1u << 20), "HW_REDUCED_ACPI");
	cr_expect(flags & (1u << 10), "RESET_REG_SUP");
	memcpy(&boot, ram + fadt + 109, sizeof(boot));
	cr_expect_eq(boot & (1u << 0), 0, "no LEGACY_DEVICES");
	cr_expect_eq(boot & (1u << 1), 0, "no 8042");
	cr_expect(boot & (1u << 2), "VGA Not Present");
	cr_expect(boot & (1u << 3), "MSI Not Supported");
	cr_expect(boot & (1u << 5), "CMOS RTC Not Present");
	cr_expect_eq(u32_at(fadt + 36), 0, "no FACS");
	cr_expect_eq(u64_at(fadt + 132), 0, "no X_FACS");
	cr_expect_eq(ram[fadt + 46] | ram[fadt + 47], 0, "no SCI");
	cr_expect_eq(u32_at(fadt + 76), 0, "no PM timer");
	check_io_byte_gas(fadt + 116, PLATFORM_RESET_PORT, "reset register");
	cr_expect_eq(ram[fadt + 128], PLATFORM_RESET_VALUE, "reset value");
	check_io_byte_gas(fadt + 244, PLATFORM_SLEEP_CONTROL_PORT,
			  "sleep control register");
	check_io_byte_gas(fadt + 256, PLATFORM_SLEEP_STATUS_PORT,
			  "sleep status register");
	cr_expect_eq(memcmp(ram + fadt + 268, "LULL\0\0\0\0", 8), 0,
		     "hypervisor vendor identity");
	cr_expect_eq(u32_at(fadt + 40), 0, "the DSDT only in X_DSDT");
	return u64_at(fadt + 140);
}

/* Where needle first occurs in the n bytes at gpa, or 0. */
static uint64_t find(uint64_t gpa, uint64_t n, const void *needle, size_t len)
{
	for (uint64_t i = 0; i + len <= n; i++)
		if (!memcmp(ram + gpa + i, needle, len))
			return gpa + i;
	return 0;
}

/*
 * The DSDT's AML, by its encodings (ACPI 6.3 section 20, 6.4.2):
 * Name (_S5, Package (4) {S5, 0, 0, 0}); Device (COM1) with EisaId
 * PNP0501, IO (Decode16, 0x3f8, 0x3f8, 1, 8), IRQNoFlags {4}, end tag.
 * test_acpi_iasl.c checks the structure as a whole.
 */
static void check_dsdt(uint64_t dsdt)
{
	uint32_t len = check_header(dsdt, "DSDT", 2);
	const uint8_t s5[] = { 0x08, '_', 'S', '5', '_', 0x12 };
	const uint8_t s5_pkg[] = { 4, 0x0a, PLATFORM_SLP_TYP_S5, 0, 0, 0 };
	const uint8_t device[] = { 0x5b, 0x82 };
	const uint8_t pnp0501[] = { 0x0c, 0x41, 0xd0, 0x05, 0x01 };
	const uint8_t io[] = { 0x47,
			       0x01,
			       LULL_COM1_PORT & 0xff,
			       LULL_COM1_PORT >> 8,
			       LULL_COM1_PORT & 0xff,
			       LULL_COM1_PORT >> 8,
			       1,
			       8 };
	const uint8_t irq[] = { 0x22, 1u << PLATFORM_COM1_GSI, 0, 0x79, 0 };
	uint64_t at, dev;

	at = find(dsdt + 36, len - 36, s5, sizeof(s5));
	cr_assert(at, "Name (_S5, Package...) is in the DSDT");
	/* the package's PkgLength (one byte), then its elements */
	cr_expect_eq(ram[at + sizeof(s5)], 1 + sizeof(s5_pkg), "_S5 PkgLength");
	cr_expect_eq(memcmp(ram + at + sizeof(s5) + 1, s5_pkg, sizeof(s5_pkg)),
		     0, "_S5 = {S5, 0, 0, 0}");
	dev = find(dsdt + 36, len - 36, device, sizeof(device));
	cr_assert(dev, "a Device");
	cr_expect(find(dev, dsdt + len - dev, "COM1", 4), "named COM1");
	cr_expect(find(dev, dsdt + len - dev, pnp0501, sizeof(pnp0501)),
		  "EisaId (\"PNP0501\")");
	at = find(dev, dsdt + len - dev, io, sizeof(io));
	cr_expect(at, "IO (Decode16, COM1, COM1, 1, 8)");
	cr_expect(at && !memcmp(ram + at + sizeof(io), irq, sizeof(irq)),
		  "IRQNoFlags {COM1's GSI}, then the end tag");
}

/* The MADT (table 5-43): Processor Local x2APIC entries (5-64) and the
 * I/O APIC (5-48). */
static void check_madt(uint64_t madt, unsigned int nr_vcpus)
{
	uint32_t len = check_header(madt, "APIC", 5);
	uint64_t p = madt + 44;
	unsigned int n = 0, ioapics = 0;

	cr_expect_eq(u32_at(madt + 36), 0xfee00000u, "local APIC address");
	cr_expect_eq(u32_at(madt + 40), 0, "flags: no PCAT_COMPAT");
	cr_assert_eq(len, 44 + 16 * nr_vcpus + 12);
	while (p < madt + len) {
		cr_assert_geq(ram[p + 1], 2, "entry length");
		if (ram[p] == 1) {
			cr_assert_eq(ram[p + 1], 12, "I/O APIC entry length");
			cr_expect_eq(ram[p + 2], PLATFORM_IOAPIC_ID);
			cr_expect_eq(u32_at(p + 4), PLATFORM_IOAPIC_GPA);
			cr_expect_eq(u32_at(p + 8), 0, "GSI base");
			ioapics++;
		} else {
			cr_assert_eq(ram[p], 9, "entry %u type", n);
			cr_assert_eq(ram[p + 1], 16, "entry %u length", n);
			cr_expect_eq(u32_at(p + 4), n, "entry %u x2APIC ID", n);
			cr_expect_eq(u32_at(p + 8), 1, "entry %u: enabled", n);
			cr_expect_eq(u32_at(p + 12), n, "entry %u UID", n);
			n++;
		}
		p += ram[p + 1];
	}
	cr_expect_eq(p, madt + len, "the entries fill the MADT");
	cr_expect_eq(n, nr_vcpus);
	cr_expect_eq(ioapics, 1);
}

static void check_tables(unsigned int nr_vcpus)
{
	uint64_t rsdp = write_tables(nr_vcpus), fadt, madt;

	check_rsdp_xsdt(rsdp, &fadt, &madt);
	check_dsdt(check_fadt(fadt));
	check_madt(madt, nr_vcpus);
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

/* x2APIC entries reach APIC ID 255: every vCPU has one. */
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
