// SPDX-License-Identifier: MIT
/*
 * multiboot.c: the header is found where the specification puts it and
 * only there; an ELF kernel loads by p_paddr and enters at e_entry; a
 * kernel with address fields (flag 16) loads byte-exact with its bss;
 * every malformed header or image is refused with a negative errno and a
 * sentence, and leaves guest RAM untouched; the information record holds
 * what the specification says, at the addresses multiboot.h promises.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "elf_builder.h"
#include "loader/multiboot.h"
#include "lull_abi.h"

#define RAM_SIZE (16ull << 20)

static uint8_t *ram;

static void ram_setup(void)
{
	ram = calloc(1, RAM_SIZE);
	cr_assert(ram);
}

static void ram_teardown(void)
{
	free(ram);
}

TestSuite(multiboot, .init = ram_setup, .fini = ram_teardown);

static bool ram_is_zero(uint64_t from, uint64_t to)
{
	for (uint64_t a = from; a < to; a++)
		if (ram[a])
			return false;
	return true;
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A header with a correct checksum at `off` of `file`. */
static void put_header(uint8_t *file, size_t off, uint32_t flags)
{
	uint32_t h[3] = { MULTIBOOT_HEADER_MAGIC, flags,
			  -(MULTIBOOT_HEADER_MAGIC + flags) };

	memcpy(file + off, h, sizeof(h));
}

/*
 * The reference a.out-kludge kernel: a 0x2000-byte file whose header at
 * 0x40 says "load the file from 0 at 1 MiB, 0x1000 bytes, bss to
 * 1 MiB + 0x3000, enter at 1 MiB + 0x80".
 */
#define AOUT_FILE_SIZE 0x2000u
#define AOUT_HEADER_OFF 0x40u
#define AOUT_LOAD 0x100000u

struct aout_fields {
	uint32_t header_addr, load_addr, load_end_addr, bss_end_addr,
		entry_addr;
};

static const struct aout_fields aout_good = {
	.header_addr = AOUT_LOAD + AOUT_HEADER_OFF,
	.load_addr = AOUT_LOAD,
	.load_end_addr = AOUT_LOAD + 0x1000,
	.bss_end_addr = AOUT_LOAD + 0x3000,
	.entry_addr = AOUT_LOAD + 0x80,
};

static uint8_t *aout_build(const struct aout_fields *f, size_t size,
			   size_t header_off)
{
	uint8_t *file = malloc(size); /* exact size: ASan sees overreads */

	cr_assert(file);
	for (size_t i = 0; i < size; i++)
		file[i] = (uint8_t)(i * 7 + 1);
	put_header(file, header_off, MULTIBOOT_AOUT_KLUDGE);
	if (header_off + 32 <= size)
		memcpy(file + header_off + 12, f, sizeof(*f));
	return file;
}

static void expect_reject(const void *file, size_t size, uint64_t ram_size,
			  int want_errno, const char *word)
{
	struct multiboot_image img = { 0 };
	char err[256] = "";
	int ret;

	ret = multiboot_load(file, size, ram, ram_size, &img, err,
			     sizeof(err));
	cr_assert_eq(ret, -want_errno, "want -%d, got %d (%s)", want_errno, ret,
		     err);
	cr_assert(err[0], "rejection without a message");
	cr_assert(strstr(err, word), "message \"%s\" lacks \"%s\"", err, word);
	cr_assert(!strchr(err, '\n'), "message has a newline: \"%s\"", err);
	cr_assert(ram_is_zero(0, RAM_SIZE), "a rejected image wrote guest RAM");
}

static void expect_aout_reject(const struct aout_fields *f, size_t size,
			       size_t header_off, int want_errno,
			       const char *word)
{
	uint8_t *file = aout_build(f, size, header_off);

	expect_reject(file, size, RAM_SIZE, want_errno, word);
	free(file);
}

Test(multiboot, detect_finds_the_header_only_where_the_spec_puts_it)
{
	uint8_t file[MULTIBOOT_SEARCH_END + 64] = { 0 };
	size_t off = 1;

	cr_assert_not(multiboot_detect(file, sizeof(file), NULL));
	put_header(file, 0x100, 0);
	cr_assert(multiboot_detect(file, sizeof(file), &off));
	cr_assert_eq(off, 0x100);

	/* not 4-byte aligned */
	memset(file, 0, sizeof(file));
	put_header(file, 0x102, 0);
	cr_assert_not(multiboot_detect(file, sizeof(file), NULL));

	/* past the first 8 KiB: the last place is MULTIBOOT_SEARCH_END - 12 */
	memset(file, 0, sizeof(file));
	put_header(file, MULTIBOOT_SEARCH_END - 8, 0);
	cr_assert_not(multiboot_detect(file, sizeof(file), NULL));
	memset(file, 0, sizeof(file));
	put_header(file, MULTIBOOT_SEARCH_END - 12, 0);
	cr_assert(multiboot_detect(file, sizeof(file), NULL));

	/* a checksum off by one */
	memset(file, 0, sizeof(file));
	put_header(file, 0, 0);
	file[8] ^= 1;
	cr_assert_not(multiboot_detect(file, sizeof(file), NULL));

	/* a file that ends inside the header */
	put_header(file, 0, 0);
	cr_assert_not(multiboot_detect(file, 11, NULL));
	cr_assert(multiboot_detect(file, 12, NULL));
}

Test(multiboot, aout_kludge_loads_byte_exact_with_its_bss)
{
	uint8_t *file = aout_build(&aout_good, AOUT_FILE_SIZE, AOUT_HEADER_OFF);
	struct multiboot_image img = { 0 };
	char err[256] = "";

	cr_assert_eq(multiboot_load(file, AOUT_FILE_SIZE, ram, RAM_SIZE, &img,
				    err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(img.entry, AOUT_LOAD + 0x80);
	cr_assert_eq(img.load_start, AOUT_LOAD);
	cr_assert_eq(img.load_end, AOUT_LOAD + 0x3000);
	cr_assert_arr_eq(ram + AOUT_LOAD, file, 0x1000);
	cr_assert(ram_is_zero(AOUT_LOAD + 0x1000, RAM_SIZE));
	cr_assert(ram_is_zero(0, AOUT_LOAD));
	free(file);
}

Test(multiboot, aout_kludge_load_end_0_takes_the_rest_of_the_file)
{
	struct aout_fields f = aout_good;
	uint8_t *file;
	struct multiboot_image img = { 0 };
	char err[256] = "";

	f.load_end_addr = 0;
	f.bss_end_addr = 0;
	file = aout_build(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF);
	cr_assert_eq(multiboot_load(file, AOUT_FILE_SIZE, ram, RAM_SIZE, &img,
				    err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(img.load_end, AOUT_LOAD + AOUT_FILE_SIZE);
	cr_assert_arr_eq(ram + AOUT_LOAD, file, AOUT_FILE_SIZE);
	free(file);
}

Test(multiboot, aout_kludge_malformed_fields_are_refused)
{
	struct aout_fields f;

	/* the file ends inside the address fields */
	expect_aout_reject(&aout_good, AOUT_HEADER_OFF + 20, AOUT_HEADER_OFF,
			   ENOEXEC, "inside them");
	f = aout_good;
	f.load_addr = f.header_addr + 4;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "above header_addr");
	f = aout_good;
	f.load_addr = AOUT_LOAD - 0x1000; /* text would start before the file */
	f.entry_addr = f.load_addr;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "bytes into the file");
	f = aout_good;
	f.load_end_addr = f.load_addr;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "not above load_addr");
	f = aout_good;
	f.load_end_addr = f.load_addr + AOUT_FILE_SIZE + 1;
	f.bss_end_addr = 0;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "the file has");
	f = aout_good;
	f.load_end_addr = 0xffffffffu; /* 4 GiB of file: no wrap, refused */
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "the file has");
	f = aout_good;
	f.bss_end_addr = f.load_end_addr - 1;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "bss_end_addr");
	f = aout_good;
	f.entry_addr = f.load_end_addr; /* in the bss, not the loaded bytes */
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "entry_addr");
	f = aout_good;
	f.entry_addr = f.load_addr - 1;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ENOEXEC,
			   "entry_addr");
}

Test(multiboot, aout_kludge_outside_ram_or_on_the_vmm_areas_is_refused)
{
	struct aout_fields f = aout_good;
	uint8_t *file = aout_build(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF);

	expect_reject(file, AOUT_FILE_SIZE, AOUT_LOAD + 0x2000, ERANGE,
		      "does not fit in guest RAM");
	free(file);

	f.bss_end_addr = 0xfffff000u; /* far beyond RAM, no wrap */
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ERANGE,
			   "does not fit in guest RAM");

	f = aout_good;
	f.load_addr = 0x1000;
	f.header_addr = 0x1000 + AOUT_HEADER_OFF;
	f.load_end_addr = 0x2000;
	f.bss_end_addr = 0;
	f.entry_addr = 0x1080;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ERANGE,
			   "boot area");

	f.load_addr = LULL_ACPI_RSDP_GPA;
	f.header_addr = LULL_ACPI_RSDP_GPA + AOUT_HEADER_OFF;
	f.load_end_addr = LULL_ACPI_RSDP_GPA + 0x1000;
	f.entry_addr = LULL_ACPI_RSDP_GPA + 0x80;
	expect_aout_reject(&f, AOUT_FILE_SIZE, AOUT_HEADER_OFF, ERANGE,
			   "ACPI area");
}

Test(multiboot, requirements_lull_cannot_meet_are_refused)
{
	uint8_t *file = aout_build(&aout_good, AOUT_FILE_SIZE, AOUT_HEADER_OFF);

	put_header(file, AOUT_HEADER_OFF,
		   MULTIBOOT_AOUT_KLUDGE | MULTIBOOT_VIDEO_MODE);
	expect_reject(file, AOUT_FILE_SIZE, RAM_SIZE, ENOEXEC, "video mode");
	put_header(file, AOUT_HEADER_OFF, MULTIBOOT_AOUT_KLUDGE | (1u << 5));
	expect_reject(file, AOUT_FILE_SIZE, RAM_SIZE, ENOEXEC, "0x20");
	/* bits 0 and 1 are met, and optional bits above 16 are not required */
	put_header(file, AOUT_HEADER_OFF,
		   MULTIBOOT_AOUT_KLUDGE | MULTIBOOT_PAGE_ALIGN |
			   MULTIBOOT_MEMORY_INFO | (1u << 20));
	{
		struct multiboot_image img;
		char err[256] = "";

		cr_assert_eq(multiboot_load(file, AOUT_FILE_SIZE, ram,
					    RAM_SIZE, &img, err, sizeof(err)),
			     0, "%s", err);
	}
	free(file);
}

Test(multiboot, no_header_or_no_way_to_load_is_refused)
{
	uint8_t file[256] = { 0 };

	expect_reject(file, sizeof(file), RAM_SIZE, ENOEXEC,
		      "no multiboot header");
	expect_reject(file, 0, RAM_SIZE, ENOEXEC, "no multiboot header");
	put_header(file, 0, 0); /* no address fields, and not an ELF */
	expect_reject(file, sizeof(file), RAM_SIZE, ENOEXEC, "not an ELF");
}

/* telf_good without its PVH note, the header at the start of its code. */
static struct tbuf elf_kernel(bool is64, uint8_t code[TELF_CODE_SIZE])
{
	struct telf d = telf_good(is64);

	for (unsigned i = 0; i < TELF_CODE_SIZE; i++)
		code[i] = (uint8_t)(0x90 + i);
	put_header(code, 0, MULTIBOOT_PAGE_ALIGN | MULTIBOOT_MEMORY_INFO);
	d.seg[0].data = code;
	d.nsegs = 2;
	return telf_build(&d);
}

Test(multiboot, elf_kernel_loads_by_paddr_and_enters_at_e_entry)
{
	for (int is64 = 0; is64 <= 1; is64++) {
		uint8_t code[TELF_CODE_SIZE];
		struct tbuf b = elf_kernel(is64, code);
		struct multiboot_image img = { 0 };
		char err[256] = "";

		memset(ram, 0, RAM_SIZE);
		cr_assert(multiboot_detect(b.bytes, b.size, NULL));
		cr_assert_eq(multiboot_load(b.bytes, b.size, ram, RAM_SIZE,
					    &img, err, sizeof(err)),
			     0, "ELF%d: %s", is64 ? 64 : 32, err);
		cr_assert_eq(img.entry, TELF_ENTRY);
		cr_assert_eq(img.load_start, TELF_CODE_GPA);
		cr_assert_eq(img.load_end, TELF_DATA_GPA + TELF_DATA_MEMSZ);
		cr_assert_arr_eq(ram + TELF_CODE_GPA, code, TELF_CODE_SIZE);
		tbuf_free(&b);
	}
}

Test(multiboot, elf_kernel_with_a_bad_entry_or_segment_is_refused)
{
	uint8_t code[TELF_CODE_SIZE];
	struct tbuf b = elf_kernel(false, code);
	uint32_t entry = TELF_DATA_GPA; /* in the data segment: not executable */

	memcpy(b.bytes + offsetof(Elf32_Ehdr, e_entry), &entry, sizeof(entry));
	expect_reject(b.bytes, b.size, RAM_SIZE, ENOEXEC, "ELF entry point");
	tbuf_free(&b);

	b = elf_kernel(false, code);
	tbuf_set_ph(&b, 1, PH_PADDR, RAM_SIZE - 0x100); /* bss past RAM */
	expect_reject(b.bytes, b.size, RAM_SIZE, ERANGE, "outside guest RAM");
	tbuf_free(&b);

	b = elf_kernel(true, code);
	{
		uint64_t far = 1ull << 32;

		memcpy(b.bytes + offsetof(Elf64_Ehdr, e_entry), &far,
		       sizeof(far));
	}
	expect_reject(b.bytes, b.size, RAM_SIZE, ENOEXEC, "above 4 GiB");
	tbuf_free(&b);
}

static struct multiboot_info read_info(void)
{
	struct multiboot_info mbi;

	memcpy(&mbi, ram + LULL_START_INFO_GPA, sizeof(mbi));
	return mbi;
}

Test(multiboot, info_holds_memory_cmdline_and_no_module)
{
	char err[256] = "";
	struct multiboot_info mbi;
	struct multiboot_mmap_entry e[3];
	const uint32_t want_flags =
		MULTIBOOT_INFO_MEMORY | MULTIBOOT_INFO_CMDLINE |
		MULTIBOOT_INFO_MODS | MULTIBOOT_INFO_MEM_MAP |
		MULTIBOOT_INFO_BOOT_LOADER_NAME;

	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, "x86/tsc.flat -v", 0,
					  0, NULL, err, sizeof(err)),
		     LULL_START_INFO_GPA, "%s", err);
	mbi = read_info();
	cr_assert_eq(mbi.flags, want_flags);
	cr_assert_eq(mbi.mem_lower, 640);
	cr_assert_eq(mbi.mem_upper, (RAM_SIZE >> 10) - 1024);
	cr_assert_str_eq((char *)ram + mbi.cmdline, "x86/tsc.flat -v");
	cr_assert_eq(mbi.mods_count, 0);
	cr_assert_str_eq((char *)ram + mbi.boot_loader_name, "lull");

	/* 640 KiB RAM, the legacy hole reserved, RAM from 1 MiB: back to back */
	cr_assert_eq(mbi.mmap_length, sizeof(e));
	memcpy(e, ram + mbi.mmap_addr, sizeof(e));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(e[i].size, 20);
	cr_assert(e[0].addr == 0 && e[0].len == 0xA0000 && e[0].type == 1);
	cr_assert(e[1].addr == 0xA0000 && e[1].len == 0x60000 &&
		  e[1].type == 2);
	cr_assert(e[2].addr == 1 << 20 && e[2].len == RAM_SIZE - (1 << 20) &&
		  e[2].type == 1);
	/* every address the record holds lies in the boot area */
	cr_assert(mbi.mmap_addr >= LULL_START_INFO_GPA + sizeof(mbi) &&
		  mbi.mmap_addr + mbi.mmap_length <= LULL_BOOT_AREA_END);
	cr_assert(ram_is_zero(LULL_BOOT_AREA_END, RAM_SIZE));
}

Test(multiboot, no_cmdline_is_an_empty_string)
{
	char err[256] = "";
	struct multiboot_info mbi;

	memset(ram + LULL_CMDLINE_GPA, 'x', 16);
	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, NULL, 0, 0, NULL,
					  err, sizeof(err)),
		     LULL_START_INFO_GPA, "%s", err);
	mbi = read_info();
	cr_assert(mbi.flags & MULTIBOOT_INFO_CMDLINE);
	cr_assert_eq(ram[mbi.cmdline], 0);
}

Test(multiboot, info_names_the_module)
{
	char err[256] = "";
	struct multiboot_info mbi;
	struct multiboot_module mod;

	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, "k", 0x800000, 0x123,
					  "/tmp/env", err, sizeof(err)),
		     LULL_START_INFO_GPA, "%s", err);
	mbi = read_info();
	cr_assert_eq(mbi.mods_count, 1);
	memcpy(&mod, ram + mbi.mods_addr, sizeof(mod));
	cr_assert_eq(mod.mod_start, 0x800000);
	cr_assert_eq(mod.mod_end, 0x800123);
	cr_assert_str_eq((char *)ram + mod.string, "/tmp/env");
	cr_assert_eq(u32_at(ram + mbi.mods_addr + 12), 0);
}

Test(multiboot, info_refuses_what_it_cannot_write)
{
	char err[256] = "";
	char *long_line = malloc(LULL_CMDLINE_MAX + 1);
	char long_string[MULTIBOOT_MODULE_STRING_MAX + 1];

	cr_assert(long_line);
	memset(long_line, 'a', LULL_CMDLINE_MAX);
	long_line[LULL_CMDLINE_MAX] = 0;
	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, long_line, 0, 0, NULL,
					  err, sizeof(err)),
		     -E2BIG);
	cr_assert(strstr(err, "command line"), "%s", err);
	long_line[LULL_CMDLINE_MAX - 1] = 0; /* the longest allowed */
	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, long_line, 0, 0, NULL,
					  err, sizeof(err)),
		     LULL_START_INFO_GPA, "%s", err);
	free(long_line);

	memset(long_string, 'm', sizeof(long_string) - 1);
	long_string[sizeof(long_string) - 1] = 0;
	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, "", 0x800000, 16,
					  long_string, err, sizeof(err)),
		     -E2BIG);
	cr_assert(strstr(err, "module's string"), "%s", err);

	cr_assert_eq(multiboot_write_info(ram, RAM_SIZE, "", RAM_SIZE - 8, 16,
					  "", err, sizeof(err)),
		     -ERANGE);
	cr_assert(strstr(err, "not inside guest RAM"), "%s", err);
	cr_assert_eq(multiboot_write_info(ram, 8ull << 30, "", 0xfffff000u,
					  0x1000, "", err, sizeof(err)),
		     -ERANGE, "a module ending at 4 GiB has no 32-bit mod_end");
	cr_assert_eq(multiboot_write_info(ram, LULL_BOOT_AREA_END - 1, "", 0,
					  0, NULL, err, sizeof(err)),
		     -ERANGE);
	cr_assert(strstr(err, "boot area"), "%s", err);
}
