// SPDX-License-Identifier: MIT
/*
 * power: powers the VM off or resets it the way an OS does, by following
 * the ACPI tables from start_info.rsdp_paddr (RSDP -> XSDT -> FADT ->
 * DSDT's \_S5), not by ports it knows. One mode word on the command line:
 *
 *   poweroff        SLP_TYP from \_S5 with SLP_EN to the FADT's sleep
 *                   control register: lull ends with status 0
 *   reset           the FADT's RESET_VALUE to its reset register: lull
 *                   ends with its reboot status
 *   kbd-reset       0xfe to the i8042 command port 0x64 (no table names
 *                   it: it is the PC's): lull's reboot status
 *   bad-sleep-type  twice a sleep type that is not \_S5's, with SLP_EN:
 *                   the VM must run on (the sleep status register then
 *                   says WAK_STS); PASS and status 0
 *
 * Output: "power: tables ok: sleep control 0x..., S5 SLP_TYP n, reset
 * 0x... <- 0x..", then "power: writing ..." before the write; after a
 * write that should have ended the VM, "power: FAIL still running" and
 * status 1. No tables (no APIC, or not lull): SKIP. Bad tables: FAIL.
 */
#include "guest.h"

#define FADT_FLAGS 112
#define FADT_HW_REDUCED_ACPI (1u << 20)
#define FADT_RESET_REG_SUP (1u << 10)
#define FADT_RESET_REG 116
#define FADT_RESET_VALUE 128
#define FADT_X_DSDT 140
#define FADT_SLEEP_CONTROL_REG 244
#define FADT_SLEEP_STATUS_REG 256
#define FADT_MIN_LENGTH 268 /* up to the sleep status register's end */
#define GAS_SYSTEM_IO 1
#define SLP_EN (1u << 5)
#define SLP_TYP_SHIFT 2
#define WAK_STS (1u << 7)
#define I8042_COMMAND_PORT 0x64
#define I8042_PULSE_RESET 0xfe

static __attribute__((noreturn)) void fail(const char *why)
{
	printf("power: FAIL %s\n", why);
	rt_exit(1);
}

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static bool sums_to_zero(const uint8_t *p, uint32_t len)
{
	uint8_t s = 0;

	for (uint32_t i = 0; i < len; i++)
		s += p[i];
	return s == 0;
}

/* A table at gpa with signature sig, whose checksum holds; or NULL. The
 * runtime's page tables map low memory 1:1. */
static const uint8_t *table(uint64_t gpa, const char *sig)
{
	const uint8_t *t = (const uint8_t *)(uintptr_t)gpa;

	if (!gpa || memcmp(t, sig, 4) || u32(t + 4) < 36 ||
	    !sums_to_zero(t, u32(t + 4)))
		return NULL;
	return t;
}

/* An 8-bit SystemIO register in a Generic Address Structure: its port. */
static uint16_t io_port(const uint8_t *gas, const char *what)
{
	if (gas[0] != GAS_SYSTEM_IO || gas[1] != 8 || u64(gas + 4) > 0xffff) {
		printf("power: FAIL %s is not an 8-bit I/O port\n", what);
		rt_exit(1);
	}
	return (uint16_t)u64(gas + 4);
}

/* \_S5's SLP_TYPa: Name (_S5, Package (n) {SLP_TYP, ...}) at the root,
 * with a one-byte PkgLength and a Byte/Zero/One first element. */
static int s5_slp_typ(const uint8_t *dsdt)
{
	const uint8_t want[] = { 0x08, '_', 'S', '5', '_', 0x12 };
	uint32_t len = u32(dsdt + 4);

	for (uint32_t i = 36; i + sizeof(want) + 4 <= len; i++) {
		const uint8_t *e = dsdt + i + sizeof(want) + 2;

		if (memcmp(dsdt + i, want, sizeof(want)))
			continue;
		if (e[0] == 0x0a)
			return e[1];
		if (e[0] == 0x00 || e[0] == 0x01)
			return e[0];
		return -1;
	}
	return -1;
}

int guest_main(void)
{
	const struct lull_hvm_start_info *si = rt_boot.start_info;
	const uint8_t *rsdp, *xsdt, *fadt = NULL, *dsdt;
	uint16_t sleep_control, sleep_status, reset_port;
	uint8_t reset_value;
	int slp_typ;

	if (!si || !si->rsdp_paddr) {
		printf("power: SKIP no ACPI tables (hv %s, rsdp_paddr 0)\n",
		       hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	rsdp = (const uint8_t *)(uintptr_t)si->rsdp_paddr;
	if (memcmp(rsdp, "RSD PTR ", 8) || !sums_to_zero(rsdp, 20) ||
	    rsdp[15] < 2 || !sums_to_zero(rsdp, u32(rsdp + 20)))
		fail("no valid revision 2 RSDP at rsdp_paddr");
	xsdt = table(u64(rsdp + 24), "XSDT");
	if (!xsdt)
		fail("no valid XSDT");
	for (uint32_t off = 36; off + 8 <= u32(xsdt + 4) && !fadt; off += 8)
		fadt = table(u64(xsdt + off), "FACP");
	if (!fadt || u32(fadt + 4) < FADT_MIN_LENGTH)
		fail("the XSDT lists no valid ACPI 5+ FADT");
	if (!(u32(fadt + FADT_FLAGS) & FADT_HW_REDUCED_ACPI) ||
	    !(u32(fadt + FADT_FLAGS) & FADT_RESET_REG_SUP))
		fail("the FADT is not hardware-reduced with a reset register");
	dsdt = table(u64(fadt + FADT_X_DSDT), "DSDT");
	if (!dsdt)
		fail("no valid DSDT at X_DSDT");
	slp_typ = s5_slp_typ(dsdt);
	if (slp_typ < 0 || slp_typ > 7)
		fail("the DSDT has no \\_S5 package with a SLP_TYP");
	sleep_control = io_port(fadt + FADT_SLEEP_CONTROL_REG, "sleep control");
	sleep_status = io_port(fadt + FADT_SLEEP_STATUS_REG, "sleep status");
	reset_port = io_port(fadt + FADT_RESET_REG, "the reset register");
	reset_value = fadt[FADT_RESET_VALUE];
	printf("power: tables ok: sleep control 0x%x, status 0x%x, S5 SLP_TYP %d, reset 0x%x <- 0x%x\n",
	       sleep_control, sleep_status, slp_typ, reset_port, reset_value);

	if (cmdline_has("poweroff")) {
		printf("power: writing SLP_TYP %d | SLP_EN to 0x%x\n", slp_typ,
		       sleep_control);
		outb(sleep_control,
		     (uint8_t)(slp_typ << SLP_TYP_SHIFT | SLP_EN));
	} else if (cmdline_has("reset")) {
		printf("power: writing 0x%x to 0x%x\n", reset_value,
		       reset_port);
		outb(reset_port, reset_value);
	} else if (cmdline_has("kbd-reset")) {
		printf("power: writing 0x%x to 0x%x\n", I8042_PULSE_RESET,
		       I8042_COMMAND_PORT);
		outb(I8042_COMMAND_PORT, I8042_PULSE_RESET);
	} else if (cmdline_has("bad-sleep-type")) {
		uint8_t other = (uint8_t)((slp_typ + 1) & 7), status;

		printf("power: writing SLP_TYP %u | SLP_EN to 0x%x, twice\n",
		       other, sleep_control);
		outb(sleep_control, (uint8_t)(other << SLP_TYP_SHIFT | SLP_EN));
		outb(sleep_control, (uint8_t)(other << SLP_TYP_SHIFT | SLP_EN));
		status = inb(sleep_status);
		if (!(status & WAK_STS))
			fail("the sleep status register does not say WAK_STS");
		printf("power: PASS still running, sleep status 0x%x\n",
		       status);
		return 0;
	} else {
		fail("no mode: poweroff, reset, kbd-reset or bad-sleep-type");
	}
	fail("still running after the write");
}
