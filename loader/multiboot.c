// SPDX-License-Identifier: MIT
/*
 * Multiboot v1: the header, the two ways to load (ELF or the header's
 * address fields) and the information record. The ELF way is pvh.c's
 * loader with e_entry for the entry; the address-field way is checked
 * here, field by field, before a byte is copied. All arithmetic on the
 * image's numbers is done in 64 bits, where 32-bit fields cannot wrap.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "loader/errmsg.h"
#include "loader/multiboot.h"
#include "loader/pvh.h"
#include "lull_abi.h"

typedef unsigned long long ull; /* printf's %llx */

#define KiB 1024ull
#define MiB (1024 * KiB)
#define FOUR_GiB (4096 * MiB)

/* The header's fields, as the file has them (offsets 0..28). */
struct multiboot_header {
	uint32_t magic;
	uint32_t flags;
	uint32_t checksum;
	uint32_t header_addr;
	uint32_t load_addr;
	uint32_t load_end_addr;
	uint32_t bss_end_addr;
	uint32_t entry_addr;
};

#define HEADER_BASE_SIZE 12 /* magic, flags, checksum */
#define HEADER_AOUT_SIZE 32 /* and the five address fields */
/* Requirements (bits 0..15) lull meets: it always does both. */
#define MULTIBOOT_HONOURED (MULTIBOOT_PAGE_ALIGN | MULTIBOOT_MEMORY_INFO)

#define MULTIBOOT_MMAP_GPA                                                \
	((LULL_START_INFO_GPA + sizeof(struct multiboot_info) + 7) & ~7ull)
#define MULTIBOOT_MODULE_STRING_GPA \
	(LULL_MODLIST_GPA + sizeof(struct multiboot_module))
#define MULTIBOOT_LOADER_NAME_GPA \
	(MULTIBOOT_MODULE_STRING_GPA + MULTIBOOT_MODULE_STRING_MAX)
static const char loader_name[] = "lull";

_Static_assert(MULTIBOOT_MMAP_GPA + PVH_MEMMAP_MAX * sizeof(struct
							     multiboot_mmap_entry) <=
		       LULL_MODLIST_GPA,
	       "the memory map must end before the module list");
_Static_assert(MULTIBOOT_LOADER_NAME_GPA + sizeof(loader_name) <=
		       LULL_CMDLINE_GPA,
	       "the module's string and the loader's name must end before the command line");

static uint32_t read_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

bool multiboot_detect(const void *file, size_t file_size, size_t *offset)
{
	const uint8_t *f = file;
	size_t end = file_size < MULTIBOOT_SEARCH_END ? file_size :
							MULTIBOOT_SEARCH_END;

	for (size_t off = 0; off + HEADER_BASE_SIZE <= end; off += 4) {
		uint32_t magic = read_u32(f + off);

		if (magic != MULTIBOOT_HEADER_MAGIC)
			continue;
		/* the three words sum to 0 modulo 2^32 */
		if ((uint32_t)(magic + read_u32(f + off + 4) +
			       read_u32(f + off + 8)) != 0)
			continue;
		if (offset)
			*offset = off;
		return true;
	}
	return false;
}

static bool ranges_overlap(uint64_t a, uint64_t a_end, uint64_t b,
			   uint64_t b_end)
{
	return a < b_end && b < a_end;
}

/* [start, end) must lie in RAM and off the VMM's areas (lull_abi.h). */
static int check_kernel_range(uint64_t start, uint64_t end, uint64_t ram_size,
			      char *err, size_t err_len)
{
	static const struct {
		uint64_t start, end;
		const char *what;
	} vmm_areas[] = {
		{ LULL_START_INFO_GPA, LULL_BOOT_AREA_END,
		  "the boot area, where lull puts the multiboot information" },
		{ LULL_ACPI_RSDP_GPA, LULL_ACPI_AREA_END,
		  "the ACPI area, where lull puts its ACPI tables" },
		{ LULL_RESET_VECTOR_GPA, LULL_RESET_VECTOR_END,
		  "the reset vector, where lull puts its reset code" },
	};

	if (end > ram_size)
		return errmsg(
			err, err_len, ERANGE,
			"the kernel [0x%llx, 0x%llx) does not fit in guest RAM (%llu MiB): give it more with --mem",
			(ull)start, (ull)end, (ull)(ram_size / MiB));
	for (size_t i = 0; i < sizeof(vmm_areas) / sizeof(vmm_areas[0]); i++)
		if (ranges_overlap(start, end, vmm_areas[i].start,
				   vmm_areas[i].end))
			return errmsg(
				err, err_len, ERANGE,
				"the kernel [0x%llx, 0x%llx) overlaps %s [0x%llx, 0x%llx)",
				(ull)start, (ull)end, vmm_areas[i].what,
				(ull)vmm_areas[i].start,
				(ull)vmm_areas[i].end);
	return 0;
}

/*
 * The header's address fields: the file from header offset minus
 * (header_addr - load_addr) is loaded at load_addr, up to load_end_addr
 * (0: to the end of the file), then zeros up to bss_end_addr (0: none).
 */
static int load_aout_kludge(const uint8_t *file, size_t file_size,
			    size_t header_off, const struct multiboot_header *h,
			    uint8_t *ram, uint64_t ram_size,
			    struct multiboot_image *img, char *err,
			    size_t err_len)
{
	uint64_t lead, file_off, load_len, load_end, end;
	int r;

	if (header_off + HEADER_AOUT_SIZE > file_size)
		return errmsg(
			err, err_len, ENOEXEC,
			"the multiboot header at 0x%zx sets flag 16 (address fields) but the file ends at 0x%zx, inside them",
			header_off, file_size);
	if (h->load_addr > h->header_addr)
		return errmsg(
			err, err_len, ENOEXEC,
			"multiboot load_addr 0x%x is above header_addr 0x%x: the header would lie before the loaded text",
			h->load_addr, h->header_addr);
	lead = (uint64_t)h->header_addr - h->load_addr;
	if (lead > header_off)
		return errmsg(
			err, err_len, ENOEXEC,
			"multiboot header_addr - load_addr is 0x%llx, but the header is only 0x%zx bytes into the file",
			(ull)lead, header_off);
	file_off = header_off - lead;
	if (h->load_end_addr == 0) {
		load_len = file_size - file_off;
	} else {
		if (h->load_end_addr <= h->load_addr)
			return errmsg(
				err, err_len, ENOEXEC,
				"multiboot load_end_addr 0x%x is not above load_addr 0x%x",
				h->load_end_addr, h->load_addr);
		load_len = (uint64_t)h->load_end_addr - h->load_addr;
		if (load_len > file_size - file_off)
			return errmsg(
				err, err_len, ENOEXEC,
				"multiboot load_end_addr 0x%x asks for 0x%llx bytes from file offset 0x%llx, but the file has 0x%llx",
				h->load_end_addr, (ull)load_len, (ull)file_off,
				(ull)(file_size - file_off));
	}
	load_end = h->load_addr + load_len;
	end = load_end;
	if (h->bss_end_addr) {
		if (h->bss_end_addr < load_end)
			return errmsg(
				err, err_len, ENOEXEC,
				"multiboot bss_end_addr 0x%x is below the end of the loaded image 0x%llx",
				h->bss_end_addr, (ull)load_end);
		end = h->bss_end_addr;
	}
	if (h->entry_addr < h->load_addr || h->entry_addr >= load_end)
		return errmsg(
			err, err_len, ENOEXEC,
			"multiboot entry_addr 0x%x is not inside the loaded image [0x%x, 0x%llx)",
			h->entry_addr, h->load_addr, (ull)load_end);
	r = check_kernel_range(h->load_addr, end, ram_size, err, err_len);
	if (r < 0)
		return r;

	memcpy(ram + h->load_addr, file + file_off, load_len);
	*img = (struct multiboot_image){ .entry = h->entry_addr,
					 .load_start = h->load_addr,
					 .load_end = end };
	return 0;
}

static int load_elf(const void *file, size_t file_size, void *ram,
		    uint64_t ram_size, struct multiboot_image *img, char *err,
		    size_t err_len)
{
	struct pvh_image elf;
	int r;

	if (file_size < SELFMAG || memcmp(file, ELFMAG, SELFMAG) != 0)
		return errmsg(
			err, err_len, ENOEXEC,
			"the multiboot header has no address fields (flag 16) and the file is not an ELF: lull cannot tell where it goes");
	r = pvh_load_elf_e_entry(file, file_size, ram, ram_size, &elf, err,
				 err_len);
	if (r < 0)
		return r;
	*img = (struct multiboot_image){ .entry = elf.entry,
					 .load_start = elf.load_start,
					 .load_end = elf.load_end };
	return 0;
}

int multiboot_load(const void *file, size_t file_size, void *ram,
		   uint64_t ram_size, struct multiboot_image *img, char *err,
		   size_t err_len)
{
	const uint8_t *f = file;
	struct multiboot_header h = { 0 };
	uint32_t unmet;
	size_t off;

	if (!multiboot_detect(file, file_size, &off))
		return errmsg(
			err, err_len, ENOEXEC,
			"no multiboot header: no magic 0x1BADB002 with a matching checksum in the first %u bytes",
			MULTIBOOT_SEARCH_END);
	memcpy(&h, f + off,
	       file_size - off < sizeof(h) ? file_size - off : sizeof(h));
	unmet = h.flags & 0xffff & ~MULTIBOOT_HONOURED;
	if (unmet & MULTIBOOT_VIDEO_MODE)
		return errmsg(
			err, err_len, ENOEXEC,
			"the multiboot header requires a video mode (flag 2), and lull has no display");
	if (unmet)
		return errmsg(
			err, err_len, ENOEXEC,
			"the multiboot header requires flags 0x%x, which lull does not know (it honours 0x%x)",
			unmet, MULTIBOOT_HONOURED);
	if (h.flags & MULTIBOOT_AOUT_KLUDGE)
		return load_aout_kludge(f, file_size, off, &h, ram, ram_size,
					img, err, err_len);
	return load_elf(file, file_size, ram, ram_size, img, err, err_len);
}

/*
 * mem_lower and mem_upper from the memory map: the RAM entry at 0 and the
 * one at 1 MiB, the first "upper memory hole" being its end.
 */
static void basic_memory(const struct lull_hvm_memmap_entry *map,
			 unsigned int n, struct multiboot_info *mbi)
{
	for (unsigned int i = 0; i < n; i++) {
		uint64_t kib = map[i].size / KiB;

		if (map[i].type != 1)
			continue;
		if (map[i].addr == 0)
			mbi->mem_lower = (uint32_t)kib;
		else if (map[i].addr == MiB)
			mbi->mem_upper = kib > UINT32_MAX ? UINT32_MAX :
							    (uint32_t)kib;
	}
	mbi->flags |= MULTIBOOT_INFO_MEMORY;
}

static void write_memory_map(uint8_t *mem, uint64_t ram_size,
			     struct multiboot_info *mbi)
{
	struct lull_hvm_memmap_entry map[PVH_MEMMAP_MAX];
	unsigned int n = pvh_memory_map(ram_size, map);

	for (unsigned int i = 0; i < n; i++) {
		struct multiboot_mmap_entry e = {
			.size = sizeof(e) - sizeof(e.size),
			.addr = map[i].addr,
			.len = map[i].size,
			.type = map[i].type,
		};

		memcpy(mem + MULTIBOOT_MMAP_GPA + i * sizeof(e), &e, sizeof(e));
	}
	basic_memory(map, n, mbi);
	mbi->mmap_addr = MULTIBOOT_MMAP_GPA;
	mbi->mmap_length = n * sizeof(struct multiboot_mmap_entry);
	mbi->flags |= MULTIBOOT_INFO_MEM_MAP;
}

int64_t multiboot_write_info(void *ram, uint64_t ram_size, const char *cmdline,
			     uint64_t module_addr, uint64_t module_size,
			     const char *module_string, char *err,
			     size_t err_len)
{
	struct multiboot_info mbi = { 0 };
	uint8_t *mem = ram;
	size_t len, string_len = 0;

	if (ram_size < LULL_BOOT_AREA_END)
		return errmsg(
			err, err_len, ERANGE,
			"guest RAM (%llu bytes) is too small to hold the boot area, which ends at 0x%x",
			(ull)ram_size, LULL_BOOT_AREA_END);
	if (!cmdline)
		cmdline = "";
	len = strnlen(cmdline, LULL_CMDLINE_MAX);
	if (len == LULL_CMDLINE_MAX)
		return errmsg(err, err_len, E2BIG,
			      "command line is %zu bytes; the limit is %d",
			      strlen(cmdline), LULL_CMDLINE_MAX - 1);
	if (module_size) {
		if (!module_string)
			module_string = "";
		string_len = strnlen(module_string,
				     MULTIBOOT_MODULE_STRING_MAX);
		if (string_len == MULTIBOOT_MODULE_STRING_MAX)
			return errmsg(
				err, err_len, E2BIG,
				"the module's string is %zu bytes; the limit is %d",
				strlen(module_string),
				MULTIBOOT_MODULE_STRING_MAX - 1);
		if (module_addr > ram_size ||
		    module_size > ram_size - module_addr ||
		    module_addr + module_size >= FOUR_GiB)
			return errmsg(
				err, err_len, ERANGE,
				"the module [0x%llx, +0x%llx) is not inside guest RAM below 4 GiB, where multiboot's 32-bit addresses reach",
				(ull)module_addr, (ull)module_size);
	}

	write_memory_map(mem, ram_size, &mbi);
	memcpy(mem + LULL_CMDLINE_GPA, cmdline, len + 1);
	mbi.cmdline = LULL_CMDLINE_GPA;
	mbi.flags |= MULTIBOOT_INFO_CMDLINE;
	/* no module: the flag still set, with a count of 0, says so */
	mbi.mods_addr = LULL_MODLIST_GPA;
	mbi.flags |= MULTIBOOT_INFO_MODS;
	if (module_size) {
		struct multiboot_module mod = {
			.mod_start = (uint32_t)module_addr,
			.mod_end = (uint32_t)(module_addr + module_size),
			.string = MULTIBOOT_MODULE_STRING_GPA,
		};

		memcpy(mem + LULL_MODLIST_GPA, &mod, sizeof(mod));
		memcpy(mem + MULTIBOOT_MODULE_STRING_GPA, module_string,
		       string_len + 1);
		mbi.mods_count = 1;
	}
	memcpy(mem + MULTIBOOT_LOADER_NAME_GPA, loader_name,
	       sizeof(loader_name));
	mbi.boot_loader_name = MULTIBOOT_LOADER_NAME_GPA;
	mbi.flags |= MULTIBOOT_INFO_BOOT_LOADER_NAME;
	memcpy(mem + LULL_START_INFO_GPA, &mbi, sizeof(mbi));
	return LULL_START_INFO_GPA;
}
