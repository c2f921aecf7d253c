// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lull_abi.h"

#include "devices/power.h"
#include "platform.h"

_Static_assert(PLATFORM_RESET_VALUE & PLATFORM_RESET_CPU,
	       "the FADT's reset value must reset");
_Static_assert((PLATFORM_SLP_TYP_S5 << POWER_SLP_TYP_SHIFT &
		~POWER_SLP_TYP_MASK) == 0,
	       "SLP_TYP is 3 bits");

void power_init(struct power *p)
{
	atomic_init(&p->ignored_sleeps, 0);
}

static enum power_event sleep_control(struct power *p, unsigned vcpu_index,
				      uint8_t value)
{
	unsigned type = (value & POWER_SLP_TYP_MASK) >> POWER_SLP_TYP_SHIFT;

	/* Without SLP_EN the write only sets up SLP_TYP (4.8.3.7). */
	if (!(value & POWER_SLP_EN))
		return POWER_HANDLED;
	if (type == PLATFORM_SLP_TYP_S5)
		return POWER_OFF;
	if (atomic_fetch_add(&p->ignored_sleeps, 1) == 0)
		fprintf(stderr,
			"lull: vcpu %u: sleep type %u is no sleep state of lull's (only %u, S5, is): ignored; further ones are only counted\n",
			vcpu_index, type, PLATFORM_SLP_TYP_S5);
	return POWER_HANDLED;
}

enum power_event power_io(struct power *p, unsigned vcpu_index,
			  uint16_t port, bool out, unsigned size,
			  uint8_t *data)
{
	if (size != 1)
		return POWER_UNCLAIMED;
	switch (port) {
	case PLATFORM_SLEEP_CONTROL_PORT:
		if (out)
			return sleep_control(p, vcpu_index, data[0]);
		data[0] = 0;
		return POWER_HANDLED;
	case PLATFORM_SLEEP_STATUS_PORT:
		if (!out)
			data[0] = POWER_WAK_STS;
		return POWER_HANDLED;
	case PLATFORM_RESET_PORT:
		if (!out) {
			data[0] = 0;
			return POWER_HANDLED;
		}
		return data[0] & PLATFORM_RESET_CPU ? POWER_RESET :
						      POWER_HANDLED;
	case PLATFORM_I8042_COMMAND_PORT:
		if (out && data[0] == PLATFORM_I8042_PULSE_RESET)
			return POWER_RESET;
		return POWER_UNCLAIMED;
	}
	return POWER_UNCLAIMED;
}

/*
 * 16-bit code: mov al, RESET_VALUE; mov dx, RESET_PORT; out dx, al; then
 * cli; hlt in a loop, should the write ever come back.
 */
static const uint8_t reset_stub[] = {
	0xb0, PLATFORM_RESET_VALUE,
	0xba, PLATFORM_RESET_PORT & 0xff, PLATFORM_RESET_PORT >> 8,
	0xee,
	0xfa, 0xf4, 0xeb, 0xfd,
};

_Static_assert(sizeof(reset_stub) <= LULL_RESET_VECTOR_END - LULL_RESET_VECTOR_GPA,
	       "the stub fits below 1 MiB");

int power_write_reset_vector(void *ram, uint64_t ram_size)
{
	if (ram_size < LULL_RESET_VECTOR_END)
		return -ERANGE;
	memcpy((uint8_t *)ram + LULL_RESET_VECTOR_GPA, reset_stub,
	       sizeof(reset_stub));
	return 0;
}
