/* SPDX-License-Identifier: MIT */
/*
 * bzImage boot, host side: the Linux x86 64-bit boot protocol
 * (Documentation/arch/x86/boot.rst). bzimage_load() checks a bzImage's
 * setup header and copies its protected-mode kernel into guest RAM;
 * bzimage_write_boot_params() then writes what the 64-bit entry needs in
 * the VMM's boot area (lull_abi.h): boot_params with the setup header,
 * the memory map (pvh_memory_map: one model for both protocols), the
 * command line, the initrd and the RSDP; the GDT; page tables that
 * identity-map the first 4 GiB with 2 MiB pages. Pure functions over byte
 * buffers, like pvh.c: no KVM, no globals.
 *
 * Contract: the file is untrusted input. Every function either succeeds or
 * returns a negative errno and writes one sentence (no trailing newline)
 * into err; it never reads or writes outside the buffers it is given.
 * bzimage_load validates the whole file before it writes a byte of guest
 * RAM, so a rejected image leaves RAM untouched.
 *
 * Where the kernel goes: at its pref_address (16 MiB for every x86-64
 * kernel built with the default CONFIG_PHYSICAL_START), not at 1 MiB.
 * A relocatable kernel's decompressor runs in place and extracts into
 * [max(its load address, LOAD_PHYSICAL_ADDR), + init_size), so one loaded
 * at 1 MiB would still take init_size bytes from 16 MiB on, and copy
 * itself there first; loaded at pref_address, the range it uses is the one
 * it was loaded into, which is what lull keeps the initrd off.
 */
#ifndef LULL_BZIMAGE_H
#define LULL_BZIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The setup header fields lull reads, at their offsets in the file and in
 * boot_params. The header runs from BZ_HDR_START to 0x202 + the byte at
 * 0x201 (the jump's offset). */
#define BZ_HDR_START 0x1f1
#define BZ_HDR_KNOWN_END 0x26c /* end of struct setup_header, protocol 2.15 */
#define BZ_MIN_VERSION 0x020c /* 2.12: xloadflags */

/*
 * The command line a bzImage gets when the user gives none: its console on
 * COM1, so that a kernel booted with no other step shows its output.
 * An explicit --cmdline (even an empty one) replaces it.
 */
#define BZ_DEFAULT_CMDLINE "console=ttyS0"

/* Where the 64-bit entry point is, from the start of the protected-mode kernel. */
#define BZ_ENTRY_64_OFFSET 0x200

struct bzimage_kernel {
	uint16_t version; /* boot protocol, 0x020f = 2.15 */
	uint64_t load_addr; /* the protected-mode kernel's first byte */
	uint64_t init_size; /* [load_addr, load_addr + init_size) is the kernel's */
	uint64_t entry; /* load_addr + BZ_ENTRY_64_OFFSET */
	uint64_t initrd_limit; /* initrd_addr_max + 1 */
	uint32_t cmdline_max; /* cmdline_size: bytes without the NUL */
	uint32_t hdr_len; /* bytes of hdr copied from the file */
	uint8_t hdr[BZ_HDR_KNOWN_END - BZ_HDR_START];
};

/* Whether the file says it is a bzImage: boot_flag 0xAA55 and "HdrS". */
bool bzimage_detect(const void *file, size_t file_size);

/*
 * Checks the setup header and copies the protected-mode kernel to
 * k->load_addr. ram must be zero-filled. Errors: -ENOEXEC (not a bzImage
 * lull can boot: truncated, protocol older than 2.12, no 64-bit entry,
 * ...), -ERANGE (does not fit this VM's RAM).
 */
int bzimage_load(const void *file, size_t file_size, void *ram,
		 uint64_t ram_size, struct bzimage_kernel *k, char *err,
		 size_t err_len);

/*
 * Whether the kernel takes cmdline (NULL: none). Errors: -E2BIG when it
 * is longer than the kernel's cmdline_size or lull's LULL_CMDLINE_MAX.
 */
int bzimage_check_cmdline(const struct bzimage_kernel *k, const char *cmdline,
			  char *err, size_t err_len);

/*
 * Writes boot_params at LULL_BOOT_PARAMS_GPA, the command line at
 * LULL_CMDLINE_GPA, the GDT and the page tables; the initrd (already in
 * RAM; size 0 for none) and the RSDP (0 for none) are named in
 * boot_params. Returns the boot_params GPA, the value for rsi.
 * Errors: -E2BIG (cmdline too long), -ERANGE (RAM smaller than the boot
 * area, an initrd not inside RAM).
 */
int64_t bzimage_write_boot_params(void *ram, uint64_t ram_size,
				  const struct bzimage_kernel *k,
				  const char *cmdline, uint64_t initrd_addr,
				  uint64_t initrd_size, uint64_t rsdp_paddr,
				  char *err, size_t err_len);

/* The 64-bit entry's segments, in the GDT at LULL_BOOT_GDT_GPA */
#define BZ_BOOT_CS 0x10 /* Linux's __BOOT_CS: 64-bit code */
#define BZ_BOOT_DS 0x18 /* __BOOT_DS: data */
#define BZ_GDT_ENTRIES 4

/* boot_params offsets (Documentation/arch/x86/zero-page.rst) */
#define BP_ACPI_RSDP_ADDR 0x070
#define BP_EXT_RAMDISK_IMAGE 0x0c0
#define BP_EXT_RAMDISK_SIZE 0x0c4
#define BP_EXT_CMD_LINE_PTR 0x0c8
#define BP_E820_ENTRIES 0x1e8
#define BP_E820_TABLE 0x2d0
#define BP_E820_MAX 128
#define BP_SIZE 4096
/* setup header offsets, the same in the file and in boot_params */
#define HDR_SETUP_SECTS 0x1f1
#define HDR_SYSSIZE 0x1f4
#define HDR_BOOT_FLAG 0x1fe
#define HDR_JUMP_OFFSET 0x201
#define HDR_MAGIC 0x202
#define HDR_VERSION 0x206
#define HDR_TYPE_OF_LOADER 0x210
#define HDR_LOADFLAGS 0x211
#define HDR_RAMDISK_IMAGE 0x218
#define HDR_RAMDISK_SIZE 0x21c
#define HDR_CMD_LINE_PTR 0x228
#define HDR_INITRD_ADDR_MAX 0x22c
#define HDR_KERNEL_ALIGNMENT 0x230
#define HDR_RELOCATABLE 0x234
#define HDR_XLOADFLAGS 0x236
#define HDR_CMDLINE_SIZE 0x238
#define HDR_PREF_ADDRESS 0x258
#define HDR_INIT_SIZE 0x260

#define BZ_BOOT_FLAG 0xaa55
#define BZ_LOADED_HIGH (1u << 0)
#define BZ_XLF_KERNEL_64 (1u << 0)
#define BZ_LOADER_UNDEFINED 0xff /* type_of_loader: a loader with no ID */

#endif
