// SPDX-License-Identifier: MIT
/*
 * The ACPI sleep and reset registers and the reset vector (power.h): which
 * writes end the VM and how, and the code a CPU finds at 0xF000:0xFFF0.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "devices/power.h"
#include "lull_abi.h"
#include "platform.h"

static enum power_event write8(struct power *p, uint16_t port, uint8_t v)
{
	return power_io(p, 0, port, true, 1, &v);
}

static uint8_t sleep_value(unsigned type, bool enable)
{
	return (uint8_t)(type << POWER_SLP_TYP_SHIFT |
			 (enable ? POWER_SLP_EN : 0));
}

Test(power, s5_with_slp_en_powers_off)
{
	struct power p;

	power_init(&p);
	cr_assert_eq(write8(&p, PLATFORM_SLEEP_CONTROL_PORT,
			    sleep_value(PLATFORM_SLP_TYP_S5, false)),
		     POWER_HANDLED, "SLP_TYP without SLP_EN only sets it up");
	cr_assert_eq(write8(&p, PLATFORM_SLEEP_CONTROL_PORT,
			    sleep_value(PLATFORM_SLP_TYP_S5, true)),
		     POWER_OFF);
}

Test(power, other_sleep_types_are_counted_and_ignored)
{
	struct power p;

	power_init(&p);
	for (unsigned type = 0; type < 8; type++)
		if (type != PLATFORM_SLP_TYP_S5)
			cr_assert_eq(write8(&p, PLATFORM_SLEEP_CONTROL_PORT,
					    sleep_value(type, true)),
				     POWER_HANDLED, "type %u", type);
	cr_assert_eq(atomic_load(&p.ignored_sleeps), 7);
}

/* Warm (0x06) and cold (0x0e) resets both set RST_CPU; SYS_RST alone, as
 * Linux writes first on its way, does not reset. */
Test(power, reset_port_resets_on_rst_cpu)
{
	struct power p;

	power_init(&p);
	cr_assert_eq(write8(&p, PLATFORM_RESET_PORT, PLATFORM_RESET_VALUE),
		     POWER_RESET);
	cr_assert_eq(write8(&p, PLATFORM_RESET_PORT, 0x0e), POWER_RESET);
	cr_assert_eq(write8(&p, PLATFORM_RESET_PORT, 0x02), POWER_HANDLED);
	cr_assert_eq(write8(&p, PLATFORM_RESET_PORT, 0x00), POWER_HANDLED);
}

Test(power, i8042_pulse_resets_and_nothing_else_is_claimed)
{
	struct power p;
	uint8_t wide[2] = { PLATFORM_RESET_VALUE, 0 };

	power_init(&p);
	cr_assert_eq(write8(&p, PLATFORM_I8042_COMMAND_PORT,
			    PLATFORM_I8042_PULSE_RESET),
		     POWER_RESET);
	cr_assert_eq(write8(&p, PLATFORM_I8042_COMMAND_PORT, 0xaa),
		     POWER_UNCLAIMED);
	cr_assert_eq(power_io(&p, 0, PLATFORM_RESET_PORT, true, 2, wide),
		     POWER_UNCLAIMED, "a 2-byte access is no 8-bit register");
	cr_assert_eq(write8(&p, 0x80, 0), POWER_UNCLAIMED);
}

/* Decodes the stub as a real-mode CPU would run it, far enough to see
 * that it writes the reset value to the reset port and then halts. */
Test(power, reset_vector_writes_the_reset_register)
{
	uint64_t ram_size = LULL_RESET_VECTOR_END;
	uint8_t *ram = calloc(1, ram_size), *code;

	cr_assert_not_null(ram);
	cr_assert_eq(power_write_reset_vector(ram, ram_size), 0);
	code = ram + LULL_RESET_VECTOR_GPA;
	cr_assert_eq(code[0], 0xb0, "mov al, imm8");
	cr_assert_eq(code[1], PLATFORM_RESET_VALUE);
	cr_assert_eq(code[2], 0xba, "mov dx, imm16");
	cr_assert_eq(code[3] | code[4] << 8, PLATFORM_RESET_PORT);
	cr_assert_eq(code[5], 0xee, "out dx, al");
	cr_assert_eq(code[7], 0xf4, "hlt after cli");
	cr_assert_eq(code[8], 0xeb, "jmp back to the hlt");
	cr_assert_eq((int8_t)code[9], -3);
	for (uint64_t i = 0; i < LULL_RESET_VECTOR_GPA; i++)
		cr_assert_eq(ram[i], 0, "byte 0x%lx written", i);
	cr_assert_eq(power_write_reset_vector(ram, ram_size - 1), -ERANGE);
	free(ram);
}
