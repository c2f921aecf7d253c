/* SPDX-License-Identifier: MIT */
/*
 * The ACPI hardware behind the FADT (acpi.c) and the PC's reset lines:
 * how a guest powers the VM off or resets it.
 *
 *   sleep control  PLATFORM_SLEEP_CONTROL_PORT, 8 bits (ACPI 6.3 4.8.3.7):
 *                  a write with SLP_EN (bit 5) set and SLP_TYP (bits 4:2)
 *                  PLATFORM_SLP_TYP_S5, the \_S5 of the DSDT, powers the VM
 *                  off. Another SLP_TYP names a sleep state lull does not
 *                  have: the first is logged, all are counted, and the
 *                  guest runs on as if it had woken at once. Reads 0.
 *   sleep status   PLATFORM_SLEEP_STATUS_PORT, 8 bits (4.8.3.8): reads
 *                  WAK_STS (bit 7), "woken", since no sleep ever lasts;
 *                  writes (which clear status bits) change nothing.
 *   reset          PLATFORM_RESET_PORT, 8 bits: a write with RST_CPU
 *                  set (PLATFORM_RESET_VALUE, the FADT's RESET_VALUE, is
 *                  one) resets the VM; other values are ignored. Reads 0.
 *   reset vector   a CPU that jumps to the reset vector, as Linux does when
 *                  it reboots "through the BIOS", finds there a few bytes
 *                  that write the reset register: lull has no firmware,
 *                  and without them it would run zeroes for ever.
 *   i8042 command  PLATFORM_I8042_COMMAND_PORT, writes only:
 *                  PLATFORM_I8042_PULSE_RESET resets the VM, as the
 *                  keyboard controller's reset line does on a PC. lull has
 *                  no keyboard controller: other commands, and reads, are
 *                  left to the caller (unclaimed).
 *
 * Only 1-byte accesses are these registers; wider ones are unclaimed.
 * power_io() decides; the caller (vmm/exits.c) stops the VM. Safe from any
 * vCPU thread at once: the only state is the counter.
 */
#ifndef LULL_POWER_H
#define LULL_POWER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* SLP_EN and SLP_TYP in the sleep control register (ACPI 6.3 table 4-21) */
#define POWER_SLP_EN (1u << 5)
#define POWER_SLP_TYP_SHIFT 2
#define POWER_SLP_TYP_MASK (7u << POWER_SLP_TYP_SHIFT)
/* WAK_STS in the sleep status register (ACPI 6.3 table 4-22) */
#define POWER_WAK_STS (1u << 7)

enum power_event {
	POWER_UNCLAIMED, /* not a power register: the caller's to report */
	POWER_HANDLED, /* done; the VM runs on */
	POWER_OFF, /* the guest entered S5 */
	POWER_RESET, /* the guest asked for a reset */
};

struct power {
	/* sleeps lull does not have, that the guest asked for */
	atomic_uint_fast64_t ignored_sleeps;
};

void power_init(struct power *p);

/*
 * One access of `size` bytes at `port`; `data` is what the guest writes
 * or where its read goes. A sleep type lull ignores is logged (once, to
 * stderr, with the vCPU's index) here.
 */
enum power_event power_io(struct power *p, unsigned vcpu_index,
			  uint16_t port, bool out, unsigned size,
			  uint8_t *data);

/*
 * Writes the reset vector's code at LULL_RESET_VECTOR_GPA in guest RAM
 * [0, ram_size) mapped at ram. -ERANGE if RAM ends before 1 MiB.
 */
int power_write_reset_vector(void *ram, uint64_t ram_size);

#endif
