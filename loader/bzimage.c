// SPDX-License-Identifier: MIT
/*
 * bzImage boot, host side: the setup header check, the kernel copy and
 * boot_params, the GDT and page tables of the 64-bit entry.
 *
 * The file's layout: the real-mode setup code, (setup_sects + 1) sectors
 * of 512 bytes (setup_sects 0 means 4), holding the setup header at
 * 0x1f1; then the protected-mode kernel, syssize 16-byte paragraphs of it
 * at least. lull never runs the real-mode part: it enters the kernel at
 * its 64-bit entry, load address + 0x200, with boot_params in rsi.
 * Fields are read with memcpy: the buffer need not be aligned.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "loader/bzimage.h"
#include "loader/errmsg.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the loader reads little-endian setup header fields in host order"
#endif

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define SECTOR 512u
#define DEFAULT_SETUP_SECTS 4u /* what setup_sects 0 means */
#define PAGE_SIZE 4096ull
#define PAGES_MAPPED_GIB 4u

typedef unsigned long long ull;

_Static_assert(LULL_BOOT_PARAMS_GPA + BP_SIZE <= LULL_BOOT_GDT_GPA &&
		       LULL_BOOT_GDT_GPA + BZ_GDT_ENTRIES * 8 <=
			       LULL_BOOT_PML4_GPA &&
		       LULL_BOOT_PML4_GPA + PAGE_SIZE <= LULL_BOOT_PDPT_GPA &&
		       LULL_BOOT_PDPT_GPA + PAGE_SIZE <= LULL_BOOT_PD_GPA &&
		       LULL_BOOT_PD_GPA + PAGES_MAPPED_GIB * PAGE_SIZE <=
			       LULL_BOOT_AREA_END,
	       "boot_params, GDT and page tables must fit the boot area in order");
_Static_assert(LULL_BOOT_AREA_END <= 0x9f000,
	       "low memory from 0x9f000 is the kernel's (its SMP trampoline)");
_Static_assert(BP_E820_TABLE + BP_E820_MAX * 20 <= BP_SIZE,
	       "boot_params' e820 table ends inside the page");
_Static_assert(PVH_MEMMAP_MAX <= BP_E820_MAX, "the memory map fits e820");

static uint8_t get8(const uint8_t *p, size_t off)
{
	return p[off];
}

static uint16_t get16(const uint8_t *p, size_t off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint32_t get32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static void put8(uint8_t *p, size_t off, uint8_t v)
{
	p[off] = v;
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

bool bzimage_detect(const void *file, size_t file_size)
{
	const uint8_t *f = file;

	return file_size >= HDR_MAGIC + 4 &&
	       get16(f, HDR_BOOT_FLAG) == BZ_BOOT_FLAG &&
	       memcmp(f + HDR_MAGIC, "HdrS", 4) == 0;
}

#define fail(errnum, ...) errmsg(err, err_len, errnum, __VA_ARGS__)

/* The header's own length, the protocol, the 64-bit entry. */
static int check_header(const uint8_t *f, size_t size, struct bzimage_kernel *k,
			char *err, size_t err_len)
{
	size_t hdr_end;

	if (!bzimage_detect(f, size))
		return fail(ENOEXEC,
			    "not a bzImage: no boot flag 0xAA55 at 0x1fe and \"HdrS\" at 0x202");
	if (size < HDR_VERSION + 2)
		return fail(ENOEXEC,
			    "truncated bzImage: the file ends inside the setup header (%zu bytes)",
			    size);
	k->version = get16(f, HDR_VERSION);
	if (k->version < BZ_MIN_VERSION)
		return fail(ENOEXEC,
			    "boot protocol %u.%02u is too old: lull needs 2.12 (Linux 3.8) or later, whose header says whether the kernel has a 64-bit entry",
			    k->version >> 8, k->version & 0xff);
	hdr_end = HDR_MAGIC + (size_t)get8(f, HDR_JUMP_OFFSET);
	if (hdr_end < HDR_INIT_SIZE + 4)
		return fail(ENOEXEC,
			    "the setup header ends at 0x%zx, before init_size (0x%x), which protocol 2.12 has",
			    hdr_end, HDR_INIT_SIZE + 4);
	if (hdr_end > size)
		return fail(ENOEXEC,
			    "truncated bzImage: the setup header ends at 0x%zx, the file at 0x%zx",
			    hdr_end, size);
	if (!(get8(f, HDR_LOADFLAGS) & BZ_LOADED_HIGH))
		return fail(ENOEXEC,
			    "the kernel is a zImage (loadflags without LOADED_HIGH): it loads at 0x10000, which lull does not do");
	if (!(get16(f, HDR_XLOADFLAGS) & BZ_XLF_KERNEL_64))
		return fail(ENOEXEC,
			    "the kernel has no 64-bit entry point (xloadflags without XLF_KERNEL_64): lull boots 64-bit x86 kernels only");
	k->hdr_len = (uint32_t)((hdr_end < BZ_HDR_KNOWN_END ? hdr_end :
							       BZ_HDR_KNOWN_END) -
				BZ_HDR_START);
	memcpy(k->hdr, f + BZ_HDR_START, k->hdr_len);
	return 0;
}

/* Where the protected-mode kernel starts in the file, and its size. */
static int check_layout(const uint8_t *f, size_t size, size_t *kernel_off,
			char *err, size_t err_len)
{
	unsigned setup_sects = get8(f, HDR_SETUP_SECTS);
	uint64_t syssize = (uint64_t)get32(f, HDR_SYSSIZE) * 16;
	size_t off;

	if (!setup_sects)
		setup_sects = DEFAULT_SETUP_SECTS;
	off = ((size_t)setup_sects + 1) * SECTOR;
	if (off >= size)
		return fail(ENOEXEC,
			    "setup_sects %u puts the protected-mode kernel at 0x%zx, at or past the end of the file (%zu bytes)",
			    setup_sects, off, size);
	if (!syssize)
		return fail(ENOEXEC,
			    "syssize is 0: the header says there is no protected-mode kernel");
	if (syssize > size - off)
		return fail(ENOEXEC,
			    "truncated bzImage: syssize says the protected-mode kernel is %llu bytes, the file has %zu after the setup code",
			    (ull)syssize, size - off);
	*kernel_off = off;
	return 0;
}

/* The load address and the range the kernel takes while it boots. */
static int place_kernel(const uint8_t *f, uint64_t kernel_size,
			uint64_t ram_size, struct bzimage_kernel *k, char *err,
			size_t err_len)
{
	uint32_t align = get32(f, HDR_KERNEL_ALIGNMENT);
	uint64_t pref = get64(f, HDR_PREF_ADDRESS);
	uint32_t initrd_max = get32(f, HDR_INITRD_ADDR_MAX);
	uint64_t end;

	k->init_size = get32(f, HDR_INIT_SIZE);
	if (k->init_size < kernel_size)
		return fail(ENOEXEC,
			    "init_size 0x%llx is smaller than the protected-mode kernel (0x%llx bytes)",
			    (ull)k->init_size, (ull)kernel_size);
	if (get8(f, HDR_RELOCATABLE) &&
	    (align < PAGE_SIZE || align > GiB || (align & (align - 1))))
		return fail(ENOEXEC,
			    "kernel_alignment 0x%x is not a power of two from 4 KiB to 1 GiB",
			    align);
	if (get8(f, HDR_RELOCATABLE) && pref % align)
		return fail(ENOEXEC,
			    "pref_address 0x%llx is not aligned to kernel_alignment 0x%x",
			    (ull)pref, align);
	if (pref < MiB || pref % PAGE_SIZE || pref >= 4 * GiB)
		return fail(ENOEXEC,
			    "pref_address 0x%llx is not a page-aligned address from 1 MiB up to 4 GiB",
			    (ull)pref);
	end = pref + k->init_size; /* both below 2^33: no wrap */
	if (end > ram_size)
		return fail(ERANGE,
			    "the kernel needs guest RAM up to 0x%llx (pref_address 0x%llx + init_size 0x%llx), more than --mem gives (0x%llx bytes)",
			    (ull)end, (ull)pref, (ull)k->init_size,
			    (ull)ram_size);
	if (initrd_max < MiB)
		return fail(ENOEXEC,
			    "initrd_addr_max 0x%x is below 1 MiB", initrd_max);
	k->load_addr = pref;
	k->entry = pref + BZ_ENTRY_64_OFFSET;
	k->initrd_limit = (uint64_t)initrd_max + 1;
	k->cmdline_max = get32(f, HDR_CMDLINE_SIZE);
	return 0;
}

int bzimage_load(const void *file, size_t file_size, void *ram,
		 uint64_t ram_size, struct bzimage_kernel *k, char *err,
		 size_t err_len)
{
	const uint8_t *f = file;
	struct bzimage_kernel out = { 0 };
	size_t kernel_off = 0;
	int ret;

	ret = check_header(f, file_size, &out, err, err_len);
	if (!ret)
		ret = check_layout(f, file_size, &kernel_off, err, err_len);
	if (!ret)
		ret = place_kernel(f, file_size - kernel_off, ram_size, &out,
				   err, err_len);
	if (ret)
		return ret;
	memcpy((uint8_t *)ram + out.load_addr, f + kernel_off,
	       file_size - kernel_off);
	*k = out;
	return 0;
}

int bzimage_check_cmdline(const struct bzimage_kernel *k, const char *cmdline,
			  char *err, size_t err_len)
{
	size_t len = cmdline ? strnlen(cmdline, LULL_CMDLINE_MAX) : 0;

	if (len >= LULL_CMDLINE_MAX)
		return fail(E2BIG,
			    "command line is at least %d bytes; lull's limit is %d",
			    LULL_CMDLINE_MAX, LULL_CMDLINE_MAX - 1);
	if (len > k->cmdline_max)
		return fail(E2BIG,
			    "command line is %zu bytes; this kernel takes at most %u (cmdline_size)",
			    len, k->cmdline_max);
	return 0;
}

/*
 * Null, null, then Linux's __BOOT_CS (64-bit code, execute/read) and
 * __BOOT_DS (flat 4 GiB data, read/write), both accessed.
 */
static void write_gdt(uint8_t *mem)
{
	const uint64_t gdt[BZ_GDT_ENTRIES] = {
		0,
		0,
		0x00af9b000000ffffull, /* BZ_BOOT_CS: G, L, P, DPL 0, code */
		0x00cf93000000ffffull, /* BZ_BOOT_DS: G, D/B, P, DPL 0, data */
	};

	memcpy(mem + LULL_BOOT_GDT_GPA, gdt, sizeof(gdt));
}

/* One PML4 entry, one PDPT with 4 entries, 4 PDs of 512 2 MiB pages each. */
static void write_page_tables(uint8_t *mem)
{
	const uint64_t present_rw = 0x3, large = 0x80;
	uint64_t e;

	memset(mem + LULL_BOOT_PML4_GPA, 0,
	       LULL_BOOT_PD_GPA + PAGES_MAPPED_GIB * PAGE_SIZE -
		       LULL_BOOT_PML4_GPA);
	e = LULL_BOOT_PDPT_GPA | present_rw;
	memcpy(mem + LULL_BOOT_PML4_GPA, &e, sizeof(e));
	for (uint64_t g = 0; g < PAGES_MAPPED_GIB; g++) {
		e = (LULL_BOOT_PD_GPA + g * PAGE_SIZE) | present_rw;
		memcpy(mem + LULL_BOOT_PDPT_GPA + g * 8, &e, sizeof(e));
		for (uint64_t i = 0; i < 512; i++) {
			e = ((g * 512 + i) << 21) | present_rw | large;
			memcpy(mem + LULL_BOOT_PD_GPA + g * PAGE_SIZE + i * 8,
			       &e, sizeof(e));
		}
	}
}

static void write_e820(uint8_t *bp, uint64_t ram_size)
{
	struct lull_hvm_memmap_entry map[PVH_MEMMAP_MAX];
	unsigned n = pvh_memory_map(ram_size, map);

	for (unsigned i = 0; i < n; i++) {
		size_t at = BP_E820_TABLE + i * 20; /* packed: u64, u64, u32 */

		put64(bp, at, map[i].addr);
		put64(bp, at + 8, map[i].size);
		put32(bp, at + 16, map[i].type);
	}
	put8(bp, BP_E820_ENTRIES, (uint8_t)n);
}

int64_t bzimage_write_boot_params(void *ram, uint64_t ram_size,
				  const struct bzimage_kernel *k,
				  const char *cmdline, uint64_t initrd_addr,
				  uint64_t initrd_size, uint64_t rsdp_paddr,
				  char *err, size_t err_len)
{
	uint8_t bp[BP_SIZE] = { 0 };
	uint8_t *mem = ram;
	size_t len = cmdline ? strlen(cmdline) : 0;
	int ret;

	if (ram_size < LULL_BOOT_AREA_END)
		return fail(ERANGE,
			    "guest RAM (0x%llx bytes) is too small to hold the boot area, which ends at 0x%x",
			    (ull)ram_size, LULL_BOOT_AREA_END);
	ret = bzimage_check_cmdline(k, cmdline, err, err_len);
	if (ret)
		return ret;
	if (initrd_size &&
	    (initrd_addr > ram_size || initrd_size > ram_size - initrd_addr ||
	     initrd_addr + initrd_size > 4 * GiB))
		return fail(ERANGE,
			    "the initrd [0x%llx, +0x%llx) is not inside guest RAM below 4 GiB",
			    (ull)initrd_addr, (ull)initrd_size);

	memcpy(bp + BZ_HDR_START, k->hdr, k->hdr_len);
	put8(bp, HDR_TYPE_OF_LOADER, BZ_LOADER_UNDEFINED);
	put32(bp, HDR_CMD_LINE_PTR, LULL_CMDLINE_GPA);
	put32(bp, HDR_RAMDISK_IMAGE, (uint32_t)initrd_addr);
	put32(bp, HDR_RAMDISK_SIZE, (uint32_t)initrd_size);
	/* before 2.14 the kernel finds the RSDP by scanning 0xE0000-0xFFFFF */
	if (k->version >= 0x020e)
		put64(bp, BP_ACPI_RSDP_ADDR, rsdp_paddr);
	write_e820(bp, ram_size);

	memset(mem + LULL_CMDLINE_GPA, 0, LULL_CMDLINE_MAX);
	if (len)
		memcpy(mem + LULL_CMDLINE_GPA, cmdline, len);
	memcpy(mem + LULL_BOOT_PARAMS_GPA, bp, sizeof(bp));
	write_gdt(mem);
	write_page_tables(mem);
	return LULL_BOOT_PARAMS_GPA;
}
