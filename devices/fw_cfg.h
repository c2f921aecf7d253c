/* SPDX-License-Identifier: MIT */
/*
 * QEMU's firmware configuration device, its legacy port interface, with
 * the few items a guest asks a PC VMM how it was made: kvm-unit-tests
 * reads its CPU count and RAM size here.
 *
 *   selector  PLATFORM_FW_CFG_PORT, 16 bits, write: selects an item and
 *             starts reading it from its first byte
 *   data      PLATFORM_FW_CFG_PORT + 1, 8 bits, read: the next byte of the
 *             selected item; past its end, and for an item lull does not
 *             have, 0 (as QEMU reads)
 *
 *   item                   value (little-endian)
 *   FW_CFG_SIGNATURE 0x00  "QEMU", the signature a guest probes for
 *   FW_CFG_ID        0x01  u32 1: the port interface only, no DMA
 *   FW_CFG_RAM_SIZE  0x03  u64 guest RAM in bytes (--mem)
 *   FW_CFG_NB_CPUS   0x05  u16 vCPUs (--vcpus)
 *   FW_CFG_MAX_CPUS  0x0f  u16 the same: lull adds no vCPU at run time
 *
 * Writes to the data port, reads of the selector and other sizes are not
 * the device's (unclaimed). Nothing is writable: the items are fixed when
 * the VM is built. Any vCPU thread, behind the device's own lock (a read
 * is a select and a stream of bytes, which two vCPUs must not interleave
 * in the device's cursor; a guest serializes them itself).
 */
#ifndef LULL_FW_CFG_H
#define LULL_FW_CFG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define FW_CFG_SIGNATURE 0x00
#define FW_CFG_ID 0x01
#define FW_CFG_RAM_SIZE 0x03
#define FW_CFG_NB_CPUS 0x05
#define FW_CFG_MAX_CPUS 0x0f

struct fw_cfg {
	pthread_mutex_t lock;
	uint64_t ram_size;
	uint16_t nr_cpus;
	uint16_t selected;
	uint32_t offset; /* the next byte of the selected item */
};

void fw_cfg_init(struct fw_cfg *f, uint64_t ram_size, uint16_t nr_cpus);
/* One access at `port` (its offset from PLATFORM_FW_CFG_PORT: 0 or 1) of
 * `size` bytes; false where it is not the device's. */
bool fw_cfg_io(struct fw_cfg *f, unsigned port, bool out, unsigned size,
	       uint8_t *data);

#endif
