// SPDX-License-Identifier: MIT
/*
 * The bzImage loader (loader/bzimage.c) and the initrd's place
 * (loader/initrd.c): every refusal with its sentence and no byte of RAM
 * written, the kernel copied to pref_address, boot_params as the boot
 * protocol defines it, the GDT and page tables of the 64-bit entry.
 * The images are synthetic: a setup header built field by field, as
 * Documentation/arch/x86/boot.rst lays it out, over a marked payload.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "loader/bzimage.h"
#include "loader/initrd.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#define MiB (1ull << 20)
#define RAM_SIZE (96 * MiB)
#define SETUP_SECTS 3
#define KERNEL_OFF ((SETUP_SECTS + 1) * 512)
#define KERNEL_SIZE 8192
#define PREF (16 * MiB)
#define INIT_SIZE (32 * MiB)

struct image {
	uint8_t *b;
	size_t size;
};

static void set16(struct image *im, size_t off, uint16_t v)
{
	memcpy(im->b + off, &v, 2);
}

static void set32(struct image *im, size_t off, uint32_t v)
{
	memcpy(im->b + off, &v, 4);
}

static void set64(struct image *im, size_t off, uint64_t v)
{
	memcpy(im->b + off, &v, 8);
}

static uint32_t get32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static uint64_t get64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, 8);
	return v;
}

/* A Linux 6.1-like bzImage: protocol 2.15, relocatable, 64-bit entry. */
static struct image build(void)
{
	struct image im = { .size = KERNEL_OFF + KERNEL_SIZE };

	im.b = calloc(1, im.size);
	cr_assert(im.b);
	im.b[HDR_SETUP_SECTS] = SETUP_SECTS;
	set32(&im, HDR_SYSSIZE, KERNEL_SIZE / 16);
	set16(&im, HDR_BOOT_FLAG, BZ_BOOT_FLAG);
	im.b[0x200] = 0xeb; /* jmp over the header: its end */
	im.b[HDR_JUMP_OFFSET] = BZ_HDR_KNOWN_END - HDR_MAGIC;
	memcpy(im.b + HDR_MAGIC, "HdrS", 4);
	set16(&im, HDR_VERSION, 0x020f);
	im.b[HDR_LOADFLAGS] = BZ_LOADED_HIGH;
	set32(&im, HDR_INITRD_ADDR_MAX, 0x7fffffff);
	set32(&im, HDR_KERNEL_ALIGNMENT, 0x200000);
	im.b[HDR_RELOCATABLE] = 1;
	set16(&im, HDR_XLOADFLAGS, 0x7f);
	set32(&im, HDR_CMDLINE_SIZE, 2047);
	set64(&im, HDR_PREF_ADDRESS, PREF);
	set32(&im, HDR_INIT_SIZE, INIT_SIZE);
	for (size_t i = 0; i < KERNEL_SIZE; i++)
		im.b[KERNEL_OFF + i] = (uint8_t)(i * 7 + 1);
	return im;
}

static uint8_t *new_ram(uint64_t size)
{
	uint8_t *ram = calloc(1, size);

	cr_assert(ram);
	return ram;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* im must be refused with errnum and a sentence holding want; RAM untouched. */
static void expect_refused(struct image *im, uint64_t ram_size, int errnum,
			   const char *want)
{
	uint8_t *ram = new_ram(ram_size);
	struct bzimage_kernel k;
	char err[300] = "";

	cr_expect_eq(bzimage_load(im->b, im->size, ram, ram_size, &k, err,
				  sizeof(err)),
		     -errnum, "want -%d for '%s', got: %s", errnum, want, err);
	cr_expect(strstr(err, want), "want '%s' in: %s", want, err);
	cr_expect(all_zero(ram, ram_size), "RAM written for a refused image");
	free(ram);
	free(im->b);
}

static struct bzimage_kernel load_ok(struct image *im, uint8_t *ram,
				     uint64_t ram_size)
{
	struct bzimage_kernel k;
	char err[300] = "";

	cr_assert_eq(bzimage_load(im->b, im->size, ram, ram_size, &k, err,
				  sizeof(err)),
		     0, "%s", err);
	return k;
}

Test(bzimage, detect)
{
	struct image im = build();

	cr_expect(bzimage_detect(im.b, im.size));
	cr_expect_not(bzimage_detect(im.b, HDR_MAGIC + 3));
	im.b[HDR_MAGIC] = 'h';
	cr_expect_not(bzimage_detect(im.b, im.size));
	free(im.b);
}

Test(bzimage, loads_at_pref_address)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k = load_ok(&im, ram, RAM_SIZE);

	cr_expect_eq(k.load_addr, PREF);
	cr_expect_eq(k.entry, PREF + 0x200);
	cr_expect_eq(k.init_size, INIT_SIZE);
	cr_expect_eq(k.initrd_limit, 0x80000000ull);
	cr_expect_eq(k.cmdline_max, 2047);
	cr_expect_eq(k.version, 0x020f);
	cr_expect_eq(memcmp(ram + PREF, im.b + KERNEL_OFF, KERNEL_SIZE), 0);
	cr_expect(all_zero(ram, PREF), "RAM below the kernel written");
	cr_expect(all_zero(ram + PREF + KERNEL_SIZE,
			   RAM_SIZE - PREF - KERNEL_SIZE),
		  "RAM after the kernel written");
	free(ram);
	free(im.b);
}

Test(bzimage, setup_sects_zero_means_four)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k;

	im.b[HDR_SETUP_SECTS] = 0;
	/* 5 sectors of setup: the kernel starts 512 bytes later */
	set32(&im, HDR_SYSSIZE, (KERNEL_SIZE - 512) / 16);
	k = load_ok(&im, ram, RAM_SIZE);
	cr_expect_eq(memcmp(ram + k.load_addr, im.b + 5 * 512,
			    KERNEL_SIZE - 512),
		     0);
	free(ram);
	free(im.b);
}

Test(bzimage, refuses_not_a_bzimage)
{
	struct image im = build();

	set16(&im, HDR_BOOT_FLAG, 0x55aa);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "not a bzImage");
}

Test(bzimage, refuses_truncated_header)
{
	struct image im = build();

	im.size = HDR_MAGIC + 4; /* magic, then nothing */
	expect_refused(&im, RAM_SIZE, ENOEXEC, "truncated bzImage");
}

Test(bzimage, refuses_old_protocol)
{
	struct image im = build();

	set16(&im, HDR_VERSION, 0x020b);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "boot protocol 2.11 is too old");
}

Test(bzimage, refuses_short_header)
{
	struct image im = build();

	im.b[HDR_JUMP_OFFSET] = 0x40; /* header ends at 0x242 */
	expect_refused(&im, RAM_SIZE, ENOEXEC, "before init_size");
}

Test(bzimage, refuses_header_past_the_file)
{
	struct image im = build();

	im.size = BZ_HDR_KNOWN_END - 4;
	expect_refused(&im, RAM_SIZE, ENOEXEC, "the setup header ends at 0x26c");
}

Test(bzimage, refuses_zimage)
{
	struct image im = build();

	im.b[HDR_LOADFLAGS] = 0;
	expect_refused(&im, RAM_SIZE, ENOEXEC, "zImage");
}

Test(bzimage, refuses_no_64bit_entry)
{
	struct image im = build();

	set16(&im, HDR_XLOADFLAGS, 0x7e);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "no 64-bit entry point");
}

Test(bzimage, refuses_setup_sects_past_the_file)
{
	struct image im = build();

	im.b[HDR_SETUP_SECTS] = 200;
	expect_refused(&im, RAM_SIZE, ENOEXEC, "setup_sects 200");
}

Test(bzimage, refuses_truncated_kernel)
{
	struct image im = build();

	im.size -= 16;
	expect_refused(&im, RAM_SIZE, ENOEXEC, "syssize says");
}

Test(bzimage, refuses_zero_syssize)
{
	struct image im = build();

	set32(&im, HDR_SYSSIZE, 0);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "syssize is 0");
}

Test(bzimage, refuses_init_size_below_kernel)
{
	struct image im = build();

	set32(&im, HDR_INIT_SIZE, KERNEL_SIZE - 1);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "init_size");
}

Test(bzimage, refuses_bad_alignment)
{
	struct image im = build();

	set32(&im, HDR_KERNEL_ALIGNMENT, 0x300000);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "kernel_alignment 0x300000");
}

Test(bzimage, refuses_misaligned_pref_address)
{
	struct image im = build();

	set64(&im, HDR_PREF_ADDRESS, PREF + 0x100000);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "not aligned to kernel_alignment");
}

Test(bzimage, refuses_pref_address_low_or_high)
{
	struct image im = build();

	im.b[HDR_RELOCATABLE] = 0;
	set64(&im, HDR_PREF_ADDRESS, 0x10000);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "pref_address 0x10000");
	im = build();
	im.b[HDR_RELOCATABLE] = 0;
	set64(&im, HDR_PREF_ADDRESS, 1ull << 40);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "up to 4 GiB");
}

Test(bzimage, refuses_ram_too_small_for_init_size)
{
	struct image im = build();

	expect_refused(&im, PREF + INIT_SIZE - 4096, ERANGE,
		       "init_size 0x2000000");
}

Test(bzimage, fits_ram_exactly)
{
	struct image im = build();
	uint8_t *ram = new_ram(PREF + INIT_SIZE);

	load_ok(&im, ram, PREF + INIT_SIZE);
	free(ram);
	free(im.b);
}

Test(bzimage, refuses_low_initrd_addr_max)
{
	struct image im = build();

	set32(&im, HDR_INITRD_ADDR_MAX, 0xfffff);
	expect_refused(&im, RAM_SIZE, ENOEXEC, "initrd_addr_max 0xfffff");
}

Test(bzimage, cmdline_size)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k;
	char err[300] = "";
	char line[LULL_CMDLINE_MAX + 1];

	set32(&im, HDR_CMDLINE_SIZE, 10);
	k = load_ok(&im, ram, RAM_SIZE);
	cr_expect_eq(bzimage_check_cmdline(&k, "0123456789", err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(bzimage_check_cmdline(&k, NULL, err, sizeof(err)), 0);
	cr_expect_eq(bzimage_check_cmdline(&k, "0123456789a", err,
					   sizeof(err)),
		     -E2BIG);
	cr_expect(strstr(err, "11 bytes; this kernel takes at most 10"), "%s",
		  err);
	cr_expect_eq(bzimage_write_boot_params(ram, RAM_SIZE, &k,
					       "0123456789a", 0, 0, 0, err,
					       sizeof(err)),
		     -E2BIG);
	cr_expect(all_zero(ram, PREF), "boot area written for a refused cmdline");

	k.cmdline_max = UINT32_MAX;
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = 0;
	cr_expect_eq(bzimage_check_cmdline(&k, line, err, sizeof(err)), -E2BIG);
	cr_expect(strstr(err, "lull's limit is 4095"), "%s", err);
	free(ram);
	free(im.b);
}

Test(bzimage, boot_params)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k = load_ok(&im, ram, RAM_SIZE);
	const uint8_t *bp = ram + LULL_BOOT_PARAMS_GPA;
	struct lull_hvm_memmap_entry map[PVH_MEMMAP_MAX];
	unsigned n = pvh_memory_map(RAM_SIZE, map);
	char err[300] = "";

	cr_assert_eq(bzimage_write_boot_params(ram, RAM_SIZE, &k,
					       "console=ttyS0 quiet",
					       80 * MiB, 12345,
					       LULL_ACPI_RSDP_GPA, err,
					       sizeof(err)),
		     LULL_BOOT_PARAMS_GPA, "%s", err);
	/* the header as the file has it, but for what the loader fills in */
	for (size_t off = BZ_HDR_START; off < BZ_HDR_KNOWN_END; off++) {
		if (off == HDR_TYPE_OF_LOADER ||
		    (off >= HDR_RAMDISK_IMAGE && off < HDR_RAMDISK_SIZE + 4) ||
		    (off >= HDR_CMD_LINE_PTR && off < HDR_CMD_LINE_PTR + 4))
			continue;
		cr_expect_eq(bp[off], im.b[off], "header byte 0x%zx", off);
	}
	cr_expect_eq(bp[HDR_TYPE_OF_LOADER], 0xff);
	cr_expect_eq(get32(bp, HDR_CMD_LINE_PTR), LULL_CMDLINE_GPA);
	cr_expect_str_eq((char *)ram + LULL_CMDLINE_GPA, "console=ttyS0 quiet");
	cr_expect_eq(get32(bp, HDR_RAMDISK_IMAGE), 80 * MiB);
	cr_expect_eq(get32(bp, HDR_RAMDISK_SIZE), 12345);
	cr_expect_eq(get32(bp, BP_EXT_RAMDISK_IMAGE), 0);
	cr_expect_eq(get32(bp, BP_EXT_CMD_LINE_PTR), 0);
	cr_expect_eq(get64(bp, BP_ACPI_RSDP_ADDR), LULL_ACPI_RSDP_GPA);
	cr_expect(all_zero(bp, BP_ACPI_RSDP_ADDR));
	/* e820: the same map PVH's start_info gets */
	cr_assert_eq(bp[BP_E820_ENTRIES], n);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *e = bp + BP_E820_TABLE + i * 20;

		cr_expect_eq(get64(e, 0), map[i].addr, "e820 %u addr", i);
		cr_expect_eq(get64(e, 8), map[i].size, "e820 %u size", i);
		cr_expect_eq(get32(e, 16), map[i].type, "e820 %u type", i);
	}
	cr_expect_eq(get64(bp + BP_E820_TABLE, 20 + 8), 0x60000);
	cr_expect_eq(get32(bp + BP_E820_TABLE, 20 + 16), 2);
	free(ram);
	free(im.b);
}

/* Before protocol 2.14 the field is not the kernel's: the RSDP is found by scanning. */
Test(bzimage, no_rsdp_field_before_2_14)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k;
	char err[300] = "";

	set16(&im, HDR_VERSION, 0x020d);
	k = load_ok(&im, ram, RAM_SIZE);
	cr_assert_eq(bzimage_write_boot_params(ram, RAM_SIZE, &k, NULL, 0, 0,
					       LULL_ACPI_RSDP_GPA, err,
					       sizeof(err)),
		     LULL_BOOT_PARAMS_GPA, "%s", err);
	cr_expect_eq(get64(ram + LULL_BOOT_PARAMS_GPA, BP_ACPI_RSDP_ADDR), 0);
	cr_expect_eq(ram[LULL_CMDLINE_GPA], 0);
	free(ram);
	free(im.b);
}

Test(bzimage, gdt_and_page_tables)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k = load_ok(&im, ram, RAM_SIZE);
	char err[300] = "";
	uint64_t pml4, pdpt;

	cr_assert_eq(bzimage_write_boot_params(ram, RAM_SIZE, &k, NULL, 0, 0, 0,
					       err, sizeof(err)),
		     LULL_BOOT_PARAMS_GPA, "%s", err);
	/* __BOOT_CS: present, code, L set; __BOOT_DS: present, writable data */
	cr_expect_eq(get64(ram + LULL_BOOT_GDT_GPA, BZ_BOOT_CS) >> 40 & 0xff,
		     0x9b);
	cr_expect(get64(ram + LULL_BOOT_GDT_GPA, BZ_BOOT_CS) & (1ull << 53));
	cr_expect_eq(get64(ram + LULL_BOOT_GDT_GPA, BZ_BOOT_DS) >> 40 & 0xff,
		     0x93);
	pml4 = get64(ram + LULL_BOOT_PML4_GPA, 0);
	cr_expect_eq(pml4, LULL_BOOT_PDPT_GPA | 3);
	/* walk every 2 MiB of the first 4 GiB: identity */
	for (uint64_t va = 0; va < (4ull << 30); va += 2 * MiB) {
		uint64_t pde;

		pdpt = get64(ram + (pml4 & ~0xfffull), (va >> 30) * 8);
		cr_assert_eq(pdpt & 1, 1, "PDPT entry for 0x%llx",
			     (unsigned long long)va);
		pde = get64(ram + (pdpt & ~0xfffull), ((va >> 21) & 511) * 8);
		cr_assert_eq(pde, va | 0x83, "PDE for 0x%llx",
			     (unsigned long long)va);
	}
	cr_expect_eq(get64(ram + LULL_BOOT_PDPT_GPA, 4 * 8), 0);
	free(ram);
	free(im.b);
}

Test(bzimage, boot_params_refuse_initrd_outside_ram)
{
	struct image im = build();
	uint8_t *ram = new_ram(RAM_SIZE);
	struct bzimage_kernel k = load_ok(&im, ram, RAM_SIZE);
	char err[300] = "";

	cr_expect_eq(bzimage_write_boot_params(ram, RAM_SIZE, &k, NULL,
					       RAM_SIZE - 4096, 8192, 0, err,
					       sizeof(err)),
		     -ERANGE);
	cr_expect(strstr(err, "initrd"), "%s", err);
	free(ram);
	free(im.b);
}

/* initrd_place: as high as allowed, page-aligned, off the kernel. */
Test(initrd, top_of_ram)
{
	uint64_t addr = 0;
	char err[300] = "";

	cr_assert_eq(initrd_place(RAM_SIZE, 5000, UINT64_MAX, PREF,
				  PREF + INIT_SIZE, &addr, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(addr, RAM_SIZE - 8192);
}

Test(initrd, below_initrd_addr_max)
{
	uint64_t addr = 0;
	char err[300] = "";

	cr_assert_eq(initrd_place(RAM_SIZE, 4096, 64 * MiB + 100, PREF,
				  PREF + INIT_SIZE, &addr, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(addr, 64 * MiB - 4096);
}

/* No room above the kernel: under it, still above 1 MiB. */
Test(initrd, below_the_kernel)
{
	uint64_t addr = 0;
	char err[300] = "";

	cr_assert_eq(initrd_place(PREF + INIT_SIZE + 4096, 2 * MiB, UINT64_MAX,
				  PREF, PREF + INIT_SIZE, &addr, err,
				  sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(addr, PREF - 2 * MiB);
}

Test(initrd, too_big)
{
	uint64_t addr = 0;
	char err[300] = "";

	cr_expect_eq(initrd_place(RAM_SIZE, RAM_SIZE - PREF - INIT_SIZE + 4096,
				  UINT64_MAX, PREF, PREF + INIT_SIZE, &addr,
				  err, sizeof(err)),
		     -E2BIG);
	cr_expect(strstr(err, "give more --mem"), "%s", err);
	cr_expect_eq(initrd_place(RAM_SIZE, RAM_SIZE, UINT64_MAX, PREF,
				  PREF + INIT_SIZE, &addr, err, sizeof(err)),
		     -E2BIG);
	/* under the kernel only low memory is left: refused */
	cr_expect_eq(initrd_place(PREF + INIT_SIZE, PREF, UINT64_MAX, PREF,
				  PREF + INIT_SIZE, &addr, err, sizeof(err)),
		     -E2BIG);
}

/* PVH: the initrd as the first module, in the start_info page. */
Test(initrd, pvh_modlist)
{
	uint8_t *ram = new_ram(4 * MiB);
	struct lull_hvm_start_info si;
	struct lull_hvm_modlist_entry mod;
	char err[300] = "";

	cr_assert_eq(pvh_write_start_info(ram, 4 * MiB, "x", 0, err,
					  sizeof(err)),
		     LULL_START_INFO_GPA, "%s", err);
	memcpy(&si, ram + LULL_START_INFO_GPA, sizeof(si));
	cr_expect_eq(si.nr_modules, 0);
	cr_assert_eq(pvh_add_initrd(ram, 4 * MiB, 3 * MiB, 777, err,
				    sizeof(err)),
		     0, "%s", err);
	memcpy(&si, ram + LULL_START_INFO_GPA, sizeof(si));
	cr_expect_eq(si.magic, LULL_HVM_START_MAGIC);
	cr_expect_eq(si.nr_modules, 1);
	cr_expect_eq(si.modlist_paddr, LULL_MODLIST_GPA);
	cr_expect_eq(si.cmdline_paddr, LULL_CMDLINE_GPA);
	memcpy(&mod, ram + si.modlist_paddr, sizeof(mod));
	cr_expect_eq(mod.paddr, 3 * MiB);
	cr_expect_eq(mod.size, 777);
	cr_expect_eq(mod.cmdline_paddr, 0);
	cr_expect_eq(mod.reserved, 0);
	cr_expect_geq(si.modlist_paddr,
		      si.memmap_paddr + si.memmap_entries *
						sizeof(struct lull_hvm_memmap_entry));
	cr_expect_eq(pvh_add_initrd(ram, 4 * MiB, 4 * MiB - 100, 777, err,
				    sizeof(err)),
		     -ERANGE);
	free(ram);
}
