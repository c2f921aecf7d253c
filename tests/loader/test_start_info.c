// SPDX-License-Identifier: MIT
/*
 * pvh_write_start_info: the start_info record, the memory map after it and
 * the command line, exactly where lull_abi.h says.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "loader/pvh.h"
#include "lull_abi.h"

static struct lull_hvm_start_info start_info(const uint8_t *ram)
{
	struct lull_hvm_start_info si;

	memcpy(&si, ram + LULL_START_INFO_GPA, sizeof(si));
	return si;
}

static struct lull_hvm_memmap_entry memmap_entry(const uint8_t *ram,
						 unsigned int i)
{
	struct lull_hvm_start_info si = start_info(ram);
	struct lull_hvm_memmap_entry e;

	memcpy(&e, ram + si.memmap_paddr + i * sizeof(e), sizeof(e));
	return e;
}

static void expect_entry(const uint8_t *ram, unsigned int i, uint64_t addr,
			 uint64_t size, uint32_t type)
{
	struct lull_hvm_memmap_entry e = memmap_entry(ram, i);

	cr_expect_eq(e.addr, addr, "entry %u addr 0x%lx", i, e.addr);
	cr_expect_eq(e.size, size, "entry %u size 0x%lx", i, e.size);
	cr_expect_eq(e.type, type, "entry %u type %u", i, e.type);
	cr_expect_eq(e.reserved, 0);
}

/* Runs pvh_write_start_info on fresh zeroed RAM of ram_size bytes. */
static uint8_t *write_start_info(uint64_t ram_size, const char *cmdline)
{
	uint8_t *ram = calloc(1, ram_size);
	char err[256] = "";
	int64_t ret;

	cr_assert(ram);
	ret = pvh_write_start_info(ram, ram_size, cmdline, 0, err, sizeof(err));
	cr_assert_eq(ret, LULL_START_INFO_GPA, "returned %ld: %s", (long)ret,
		     err);
	return ram;
}

Test(start_info, record_and_memmap_16mib)
{
	uint8_t *ram = write_start_info(16 << 20, "console=ttyS0 lull.test=1");
	struct lull_hvm_start_info si = start_info(ram);

	cr_expect_eq(si.magic, LULL_HVM_START_MAGIC);
	cr_expect_eq(si.version, 1);
	cr_expect_eq(si.flags, 0);
	cr_expect_eq(si.nr_modules, 0);
	cr_expect_eq(si.modlist_paddr, 0);
	cr_expect_eq(si.rsdp_paddr, 0);
	cr_expect_eq(si.memmap_paddr, LULL_START_INFO_GPA + sizeof(si));
	cr_expect_eq(si.memmap_paddr % 8, 0);
	cr_assert_eq(si.memmap_entries, 3);
	cr_expect_leq(si.memmap_paddr +
			      3 * sizeof(struct lull_hvm_memmap_entry),
		      LULL_CMDLINE_GPA);
	expect_entry(ram, 0, 0, 0xA0000, 1);
	expect_entry(ram, 1, 0xA0000, 0x60000, 2);
	expect_entry(ram, 2, 0x100000, (16 << 20) - 0x100000, 1);

	cr_expect_eq(si.cmdline_paddr, LULL_CMDLINE_GPA);
	cr_expect_str_eq((char *)ram + LULL_CMDLINE_GPA,
			 "console=ttyS0 lull.test=1");
	free(ram);
}

/* rsdp_paddr is handed over as it is given: acpi.c's RSDP, or 0. */
Test(start_info, rsdp_paddr)
{
	uint8_t *ram = calloc(1, 1 << 20);
	char err[256] = "";

	cr_assert_eq(pvh_write_start_info(ram, 1 << 20, NULL,
					  LULL_ACPI_RSDP_GPA, err, sizeof(err)),
		     LULL_START_INFO_GPA, "%s", err);
	cr_expect_eq(start_info(ram).rsdp_paddr, LULL_ACPI_RSDP_GPA);
	free(ram);
}

Test(start_info, no_cmdline)
{
	uint8_t *ram = write_start_info(2 << 20, NULL);

	cr_expect_eq(start_info(ram).cmdline_paddr, 0);
	free(ram);
	ram = write_start_info(2 << 20, "");
	cr_expect_eq(start_info(ram).cmdline_paddr, 0);
	free(ram);
}

Test(start_info, longest_cmdline_fits_boot_area)
{
	char *cmdline = malloc(LULL_CMDLINE_MAX);
	uint8_t *ram;

	memset(cmdline, 'a', LULL_CMDLINE_MAX - 1);
	cmdline[LULL_CMDLINE_MAX - 1] = 0;
	ram = write_start_info(1 << 20, cmdline);
	cr_expect_eq(start_info(ram).cmdline_paddr, LULL_CMDLINE_GPA);
	cr_expect_eq(ram[LULL_CMDLINE_GPA + LULL_CMDLINE_MAX - 2], 'a');
	cr_expect_eq(ram[LULL_CMDLINE_GPA + LULL_CMDLINE_MAX - 1], 0);
	cr_expect_leq(LULL_CMDLINE_GPA + LULL_CMDLINE_MAX, LULL_BOOT_AREA_END);
	free(ram);
	free(cmdline);
}

Test(start_info, too_long_cmdline_rejected)
{
	size_t len = LULL_CMDLINE_MAX;
	char *cmdline = malloc(len + 1);
	uint8_t *ram = calloc(1, 1 << 20);
	char err[256] = "";

	memset(cmdline, 'a', len);
	cmdline[len] = 0;
	cr_assert_eq(pvh_write_start_info(ram, 1 << 20, cmdline, 0, err,
					  sizeof(err)),
		     -E2BIG);
	cr_expect(strstr(err, "command line is 4096 bytes"), "message: %s",
		  err);
	cr_expect_eq(start_info(ram).magic, 0,
		     "start_info written despite the error");
	free(ram);
	free(cmdline);
}

Test(start_info, ram_too_small)
{
	uint8_t *ram = calloc(1, LULL_BOOT_AREA_END);
	char err[256] = "";

	cr_assert_eq(pvh_write_start_info(ram, LULL_BOOT_AREA_END - 1, NULL, 0,
					  err, sizeof(err)),
		     -ERANGE);
	cr_expect(strstr(err, "too small"), "message: %s", err);
	free(ram);
}

Test(start_info, small_ram_maps)
{
	uint8_t *ram;

	/* Just the boot area: one RAM entry. */
	ram = write_start_info(LULL_BOOT_AREA_END, "x");
	cr_assert_eq(start_info(ram).memmap_entries, 1);
	expect_entry(ram, 0, 0, LULL_BOOT_AREA_END, 1);
	free(ram);

	/* 768 KiB: the hole is reserved only as far as RAM goes. */
	ram = write_start_info(0xC0000, NULL);
	cr_assert_eq(start_info(ram).memmap_entries, 2);
	expect_entry(ram, 0, 0, 0xA0000, 1);
	expect_entry(ram, 1, 0xA0000, 0x20000, 2);
	free(ram);

	/* Exactly 1 MiB: no high RAM entry of size 0. */
	ram = write_start_info(1 << 20, NULL);
	cr_assert_eq(start_info(ram).memmap_entries, 2);
	expect_entry(ram, 1, 0xA0000, 0x60000, 2);
	free(ram);
}
