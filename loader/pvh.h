/* SPDX-License-Identifier: MIT */
/*
 * PVH boot, host side: load a guest ELF into guest RAM and build the
 * hvm_start_info the guest finds in ebx. Pure functions over byte buffers:
 * no KVM, no globals.
 *
 * Contract: the ELF is untrusted input. Every function either succeeds or
 * returns a negative errno and writes one sentence (no trailing newline)
 * into err; it never reads or writes outside the buffers it is given.
 * pvh_load_elf validates the whole file before it writes a single byte of
 * guest RAM, so a rejected image leaves RAM untouched.
 *
 * Guest RAM is the flat range [0, ram_size) mapped at `ram`; the boot area
 * [LULL_START_INFO_GPA, LULL_BOOT_AREA_END) and the ACPI area
 * [LULL_ACPI_RSDP_GPA, LULL_ACPI_AREA_END) belong to the VMM (lull_abi.h).
 */
#ifndef LULL_PVH_H
#define LULL_PVH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lull_abi.h"

struct pvh_image {
	uint32_t
		entry; /* XEN_ELFNOTE_PHYS32_ENTRY value: 32-bit physical entry */
	uint64_t load_start; /* lowest guest-physical byte written */
	uint64_t load_end; /* one past the highest (p_paddr + p_memsz) */
	/* LULL_NOTE_ALL_VCPUS_ENTER: every vCPU starts at the entry, not
	 * only vCPU 0 (the others then wait for INIT and SIPI) */
	bool all_vcpus_enter;
};

/*
 * Loads the PT_LOAD segments of an ELF32/ELF64 x86 ET_EXEC image by p_paddr
 * and returns the PVH entry from its Xen note (type 18). ram must be
 * zero-filled: the bss part of a segment (p_memsz beyond p_filesz) is not
 * written, so untouched guest pages stay unbacked.
 * Errors: -ENOEXEC (not a loadable PVH ELF), -ERANGE (does not fit this VM's
 * RAM or touches the boot area or the ACPI area).
 */
int pvh_load_elf(const void *file, size_t file_size, void *ram,
		 uint64_t ram_size, struct pvh_image *img, char *err,
		 size_t err_len);

/*
 * pvh_load_elf without the PVH note, for a boot protocol that enters the
 * ELF at its header's e_entry (multiboot.c): the same checks, the same
 * loading by p_paddr, the same errors, RAM untouched on failure.
 * img->entry is e_entry, which must lie below 4 GiB in the file bytes of an
 * executable PT_LOAD segment; all_vcpus_enter is false.
 */
int pvh_load_elf_e_entry(const void *file, size_t file_size, void *ram,
			 uint64_t ram_size, struct pvh_image *img, char *err,
			 size_t err_len);

/*
 * Writes hvm_start_info (version 1) at LULL_START_INFO_GPA, the memory map
 * right after it and the NUL-terminated cmdline at LULL_CMDLINE_GPA
 * (cmdline NULL or "" => cmdline_paddr 0). rsdp_paddr goes into the record
 * as it is: the ACPI RSDP's address (acpi.h), or 0 for no ACPI tables.
 * Returns the start_info GPA, the value for ebx. Errors: -E2BIG (cmdline
 * of LULL_CMDLINE_MAX bytes or more), -ERANGE (RAM smaller than the boot
 * area).
 */
int64_t pvh_write_start_info(void *ram, uint64_t ram_size, const char *cmdline,
			     uint64_t rsdp_paddr, char *err, size_t err_len);

/*
 * After pvh_write_start_info: names one module, the initrd at
 * [paddr, paddr + size) (already in guest RAM), in a hvm_modlist_entry at
 * LULL_MODLIST_GPA; Linux's PVH entry takes the first module as its
 * initramfs. Errors: -ERANGE (the initrd is empty or not inside RAM, or RAM
 * is smaller than the boot area).
 */
int pvh_add_initrd(void *ram, uint64_t ram_size, uint64_t paddr, uint64_t size,
		   char *err, size_t err_len);

/*
 * The guest's memory map, one model for both boot protocols: RAM
 * [0, 0xA0000), reserved up to 1 MiB (the ACPI area is in there), RAM from
 * 1 MiB to ram_size; entries cut at ram_size. Returns the entry count.
 */
#define PVH_MEMMAP_MAX 3

unsigned int pvh_memory_map(uint64_t ram_size,
			    struct lull_hvm_memmap_entry map[PVH_MEMMAP_MAX]);

#endif
