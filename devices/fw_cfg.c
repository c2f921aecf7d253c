// SPDX-License-Identifier: MIT
#include <string.h>

#include "devices/fw_cfg.h"

void fw_cfg_init(struct fw_cfg *f, uint64_t ram_size, uint16_t nr_cpus)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->ram_size = ram_size;
	f->nr_cpus = nr_cpus;
}

/* Byte `offset` of item `key`; 0 past its end or for no such item. */
static uint8_t item_byte(const struct fw_cfg *f, uint16_t key, uint32_t offset)
{
	uint64_t value;
	unsigned len;

	switch (key) {
	case FW_CFG_SIGNATURE:
		return offset < 4 ? (uint8_t)"QEMU"[offset] : 0;
	case FW_CFG_ID:
		value = 1;
		len = 4;
		break;
	case FW_CFG_RAM_SIZE:
		value = f->ram_size;
		len = 8;
		break;
	case FW_CFG_NB_CPUS:
	case FW_CFG_MAX_CPUS:
		value = f->nr_cpus;
		len = 2;
		break;
	default:
		return 0;
	}
	return offset < len ? (uint8_t)(value >> (offset * 8)) : 0;
}

bool fw_cfg_io(struct fw_cfg *f, unsigned port, bool out, unsigned size,
	       uint8_t *data)
{
	if (port == 0 && out && size == 2) {
		pthread_mutex_lock(&f->lock);
		f->selected = (uint16_t)(data[0] | data[1] << 8);
		f->offset = 0;
		pthread_mutex_unlock(&f->lock);
		return true;
	}
	if (port == 1 && !out && size == 1) {
		pthread_mutex_lock(&f->lock);
		data[0] = item_byte(f, f->selected, f->offset);
		/* stays put at the end, where it reads 0 for ever */
		if (f->offset < UINT32_MAX)
			f->offset++;
		pthread_mutex_unlock(&f->lock);
		return true;
	}
	return false;
}
