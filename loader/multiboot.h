/* SPDX-License-Identifier: MIT */
/*
 * Multiboot (version 1, the 0.6.96 specification), host side: find the
 * multiboot header in a kernel image, load the image, and build the
 * multiboot information the kernel finds in ebx. Pure functions over byte
 * buffers: no KVM, no globals.
 *
 * The header is the 32-bit-aligned magic 0x1BADB002 in the image's first
 * 8192 bytes, followed by flags and a checksum that makes the three sum to
 * zero. Flags 0 (modules page-aligned) and 1 (memory information) are
 * always honoured; any other requirement in bits 0..15 (a video mode, or
 * a bit the specification does not define) is refused, as the
 * specification asks of a loader that cannot meet it. With flag 16 the
 * header's address fields say where the image goes (the "a.out kludge");
 * without it the image must be an ELF, loaded by p_paddr as pvh.c loads
 * one and entered at e_entry.
 *
 * The kernel is entered as PVH is (boot.h): 32-bit protected mode, flat
 * segments, paging and interrupts off, with eax = MULTIBOOT_BOOT_MAGIC and
 * ebx = the multiboot information's address.
 *
 * Contract: the image is untrusted input. Every function either succeeds
 * or returns a negative errno and writes one sentence (no trailing
 * newline) into err; it never reads or writes outside the buffers it is
 * given, and multiboot_load validates everything before it writes a byte
 * of guest RAM.
 *
 * Guest RAM is the flat range [0, ram_size) mapped at `ram`. The
 * information goes into the VMM's boot area (lull_abi.h): the record at
 * LULL_START_INFO_GPA, the memory map right after it, the module list at
 * LULL_MODLIST_GPA with the module's string and the loader's name after
 * it, the command line at LULL_CMDLINE_GPA.
 */
#ifndef LULL_MULTIBOOT_H
#define LULL_MULTIBOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MULTIBOOT_HEADER_MAGIC 0x1BADB002u
#define MULTIBOOT_BOOT_MAGIC 0x2BADB002u /* eax at the entry */
#define MULTIBOOT_SEARCH_END 8192u /* the header lies in these first bytes */

/* The header's flags */
#define MULTIBOOT_PAGE_ALIGN (1u << 0) /* modules on 4 KiB boundaries */
#define MULTIBOOT_MEMORY_INFO (1u << 1) /* mem_lower/upper and the mmap */
#define MULTIBOOT_VIDEO_MODE (1u << 2)
#define MULTIBOOT_AOUT_KLUDGE (1u << 16) /* the header's address fields */

/* The information's flags */
#define MULTIBOOT_INFO_MEMORY (1u << 0)
#define MULTIBOOT_INFO_CMDLINE (1u << 2)
#define MULTIBOOT_INFO_MODS (1u << 3)
#define MULTIBOOT_INFO_MEM_MAP (1u << 6)
#define MULTIBOOT_INFO_BOOT_LOADER_NAME (1u << 9)

/* The multiboot information, up to the VBE fields (all 0 here). */
struct multiboot_info {
	uint32_t flags;
	uint32_t mem_lower; /* KiB from 0 */
	uint32_t mem_upper; /* KiB from 1 MiB up to the first hole */
	uint32_t boot_device;
	uint32_t cmdline;
	uint32_t mods_count;
	uint32_t mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length; /* bytes */
	uint32_t mmap_addr;
	uint32_t drives_length;
	uint32_t drives_addr;
	uint32_t config_table;
	uint32_t boot_loader_name;
	uint32_t apm_table;
	uint32_t vbe_control_info;
	uint32_t vbe_mode_info;
	uint16_t vbe_mode;
	uint16_t vbe_interface_seg;
	uint16_t vbe_interface_off;
	uint16_t vbe_interface_len;
};

_Static_assert(sizeof(struct multiboot_info) == 88, "multiboot 0.6.96");

/* One memory map entry; size counts the bytes after itself (20). */
struct multiboot_mmap_entry {
	uint32_t size;
	uint64_t addr;
	uint64_t len;
	uint32_t type; /* 1 RAM, anything else reserved */
} __attribute__((packed));

struct multiboot_module {
	uint32_t mod_start;
	uint32_t mod_end; /* one past the last byte */
	uint32_t string; /* its NUL-terminated string */
	uint32_t reserved;
};

struct multiboot_image {
	uint32_t entry;
	uint64_t load_start; /* lowest guest-physical byte the kernel takes */
	uint64_t load_end; /* one past the highest, bss included */
};

/*
 * Whether the image has a multiboot header: the magic, 4-byte aligned, in
 * its first MULTIBOOT_SEARCH_END bytes, with a checksum that matches.
 * *offset (may be NULL) is its offset in the file.
 */
bool multiboot_detect(const void *file, size_t file_size, size_t *offset);

/*
 * Loads a kernel that multiboot_detect accepts. ram must be zero-filled
 * (bss is not written). Errors: -ENOEXEC (a header lull cannot honour, or
 * a malformed image), -ERANGE (the image does not fit this VM's RAM or
 * touches the boot area, the ACPI area or the reset vector).
 */
int multiboot_load(const void *file, size_t file_size, void *ram,
		   uint64_t ram_size, struct multiboot_image *img, char *err,
		   size_t err_len);

/*
 * Writes the multiboot information, the memory map (pvh_memory_map's, one
 * model for every protocol) and the command line (NULL: an empty one; the
 * kernel then still finds a string), and, when module_size is not 0, one
 * module [module_addr, module_addr + module_size), already in guest RAM,
 * named module_string (NULL: ""). Returns the information's GPA, the
 * value for ebx. Errors: -E2BIG (command line of LULL_CMDLINE_MAX bytes
 * or more, module string too long), -ERANGE (RAM smaller than the boot
 * area, the module not inside RAM below 4 GiB).
 */
#define MULTIBOOT_MODULE_STRING_MAX 1024 /* including the NUL */

int64_t multiboot_write_info(void *ram, uint64_t ram_size, const char *cmdline,
			     uint64_t module_addr, uint64_t module_size,
			     const char *module_string, char *err,
			     size_t err_len);

#endif
