// SPDX-License-Identifier: MIT
/*
 * fw_cfg (devices/fw_cfg.h): what kvm-unit-tests' fwcfg_get_u*() reads, a
 * 16-bit select then the item a byte at a time, little-endian; 0 past an
 * item's end and for items lull does not have; only those two accesses
 * are the device's.
 */
#include <criterion/criterion.h>

#include "devices/fw_cfg.h"

static struct fw_cfg f;

static void select_item(uint16_t key)
{
	uint8_t data[2] = { (uint8_t)key, (uint8_t)(key >> 8) };

	cr_assert(fw_cfg_io(&f, 0, true, 2, data));
}

/* fwcfg_get_u(): select, then `bytes` reads of the data port. */
static uint64_t read_item(uint16_t key, unsigned bytes)
{
	uint64_t value = 0;

	select_item(key);
	for (unsigned i = 0; i < bytes; i++) {
		uint8_t b = 0xaa;

		cr_assert(fw_cfg_io(&f, 1, false, 1, &b));
		value |= (uint64_t)b << (i * 8);
	}
	return value;
}

Test(fw_cfg, items_read_as_kvm_unit_tests_reads_them)
{
	fw_cfg_init(&f, 3ull << 30, 4);
	cr_assert_eq(read_item(FW_CFG_SIGNATURE, 4), 0x554d4551, "\"QEMU\"");
	cr_assert_eq(read_item(FW_CFG_ID, 4), 1, "the port interface");
	cr_assert_eq(read_item(FW_CFG_RAM_SIZE, 8), 3ull << 30);
	cr_assert_eq(read_item(FW_CFG_NB_CPUS, 2), 4);
	cr_assert_eq(read_item(FW_CFG_MAX_CPUS, 2), 4);
}

Test(fw_cfg, past_the_end_and_unknown_items_read_0)
{
	fw_cfg_init(&f, 16ull << 20, 1);
	cr_assert_eq(read_item(FW_CFG_NB_CPUS, 8), 1, "bytes past a u16");
	cr_assert_eq(read_item(0x4000, 8), 0, "no such item");
	cr_assert_eq(read_item(0xffff, 1), 0);
	/* a new select starts the item again */
	cr_assert_eq(read_item(FW_CFG_RAM_SIZE, 4), 16u << 20);
	cr_assert_eq(read_item(FW_CFG_RAM_SIZE, 4), 16u << 20);
}

Test(fw_cfg, other_accesses_are_not_the_devices)
{
	uint8_t data[4] = { 0 };

	fw_cfg_init(&f, 16ull << 20, 1);
	cr_assert_not(fw_cfg_io(&f, 0, true, 1, data), "a byte select");
	cr_assert_not(fw_cfg_io(&f, 0, false, 2, data), "a selector read");
	cr_assert_not(fw_cfg_io(&f, 1, true, 1, data), "a data write");
	cr_assert_not(fw_cfg_io(&f, 1, false, 2, data), "a 16-bit data read");
	cr_assert_not(fw_cfg_io(&f, 1, false, 4, data));
}
