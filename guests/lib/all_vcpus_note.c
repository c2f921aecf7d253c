// SPDX-License-Identifier: MIT
/*
 * all_vcpus_note.c: the ELF note that asks lull to start every vCPU at
 * the PVH entry point at once (LULL_NOTE_ALL_VCPUS_ENTER, lull_abi.h).
 *
 * The runtime's APs (entry.S, rt.c) have no other way in: nothing in it
 * sends INIT/SIPI. Without this note lull starts vCPU 0 only and the
 * others wait for INIT and SIPI from its local APIC, as QEMU's do and as
 * the apic guest wants, so it is linked into every guest but that one
 * (guests/meson.build). guest.ld puts .note.lull in the PT_NOTE segment,
 * which is where lull's loader looks.
 *
 * Written in C so that the name and type come from lull_abi.h, the one
 * place lull's loader takes them from too.
 */
#include <stdint.h>

#include <lull_abi.h>

struct lull_note {
	uint32_t namesz, descsz, type;
	char name[(sizeof(LULL_NOTE_NAME) + 3) & ~3u]; /* padded to 4 */
};

__attribute__((used, section(".note.lull"), aligned(4)))
static const struct lull_note all_vcpus_note = {
	.namesz = sizeof(LULL_NOTE_NAME),
	.descsz = 0,
	.type = LULL_NOTE_ALL_VCPUS_ENTER,
	.name = LULL_NOTE_NAME,
};
