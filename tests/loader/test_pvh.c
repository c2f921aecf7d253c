// SPDX-License-Identifier: MIT
/*
 * pvh_load_elf: good ELF64/ELF32 images load byte-exact and leave bss alone;
 * every kind of broken image is refused with a negative errno and a sentence
 * that names the problem, and leaves guest RAM untouched.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "elf_builder.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#define RAM_SIZE (16ull << 20)
#define CANARY 0xa5

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

TestSuite(loader, .init = ram_setup, .fini = ram_teardown);

static bool ram_is_zero(uint64_t from, uint64_t to)
{
	for (uint64_t a = from; a < to; a++)
		if (ram[a])
			return false;
	return true;
}

/* Loads b; on rejection checks errno, a non-empty message with `word`, untouched RAM. */
static void expect_reject(struct tbuf *b, uint64_t ram_size, int want_errno,
			  const char *word)
{
	struct pvh_image img = { 0 };
	char err[256] = "";
	int ret;

	ret = pvh_load_elf(b->bytes, b->size, ram, ram_size, &img, err,
			   sizeof(err));
	cr_assert_eq(ret, -want_errno, "want -%d, got %d (%s)", want_errno, ret,
		     err);
	cr_assert(err[0], "rejection without a message");
	cr_assert(strstr(err, word), "message \"%s\" lacks \"%s\"", err, word);
	cr_assert(!strchr(err, '\n'), "message has a newline: \"%s\"", err);
	cr_assert(ram_is_zero(0, 0x400000), "a rejected image wrote guest RAM");
	tbuf_free(b);
}

static void expect_reject_desc(const struct telf *d, int want_errno,
			       const char *word)
{
	struct tbuf b = telf_build(d);

	expect_reject(&b, RAM_SIZE, want_errno, word);
}

static void expect_accept(struct tbuf *b, struct pvh_image *img)
{
	char err[256] = "";
	int ret;

	ret = pvh_load_elf(b->bytes, b->size, ram, RAM_SIZE, img, err,
			   sizeof(err));
	cr_assert_eq(ret, 0, "rejected: %s", err);
	tbuf_free(b);
}

static void check_good_load(bool is64)
{
	struct telf d = telf_good(is64);
	struct tbuf b = telf_build(&d);
	struct pvh_image img;

	/* The loader must not write the bss tail: a canary there survives. */
	memset(ram + TELF_DATA_GPA + TELF_DATA_FILESZ, CANARY,
	       TELF_DATA_MEMSZ - TELF_DATA_FILESZ);
	expect_accept(&b, &img);

	cr_expect_eq(img.entry, TELF_ENTRY);
	cr_expect_eq(img.load_start, TELF_CODE_GPA);
	cr_expect_eq(img.load_end, TELF_DATA_GPA + TELF_DATA_MEMSZ);
	for (unsigned int k = 0; k < TELF_CODE_SIZE; k++)
		cr_assert_eq(ram[TELF_CODE_GPA + k], telf_pattern(0, k),
			     "code byte %u", k);
	for (unsigned int k = 0; k < TELF_DATA_FILESZ; k++)
		cr_assert_eq(ram[TELF_DATA_GPA + k], telf_pattern(1, k),
			     "data byte %u", k);
	for (unsigned int k = TELF_DATA_FILESZ; k < TELF_DATA_MEMSZ; k++)
		cr_assert_eq(ram[TELF_DATA_GPA + k], CANARY,
			     "bss byte %u was written", k);
	cr_expect(ram_is_zero(0, TELF_CODE_GPA));
	cr_expect(ram_is_zero(TELF_CODE_GPA + TELF_CODE_SIZE, TELF_DATA_GPA));
	cr_expect(ram_is_zero(TELF_DATA_GPA + TELF_DATA_MEMSZ, RAM_SIZE));
}

Test(loader, good_elf64)
{
	check_good_load(true);
}

Test(loader, good_elf32)
{
	check_good_load(false);
}

Test(loader, entry_note_with_64bit_descriptor)
{
	struct telf d = telf_good(true);
	uint64_t entry = TELF_ENTRY + 4;
	uint8_t note[64];
	struct pvh_image img;
	struct tbuf b;

	telf_set_notes(&d, note, telf_note(note, 4, "Xen", 18, &entry, 8, 4));
	b = telf_build(&d);
	expect_accept(&b, &img);
	cr_expect_eq(img.entry, TELF_ENTRY + 4);
}

/* A GNU property note (8-aligned, p_align 8) and other Xen notes before the PVH one. */
Test(loader, entry_note_after_other_notes)
{
	struct telf d = telf_good(true);
	uint8_t gnu_desc[16] = { 2, 0, 0, 0xc0, 4, 0, 0, 0, 3 };
	uint8_t notes[128];
	uint64_t virt_entry = 0xffffffff81000000ull;
	uint32_t entry = TELF_ENTRY + 8;
	size_t n = 0;
	struct pvh_image img;
	struct tbuf b;

	n += telf_note(notes + n, 4, "GNU", NT_GNU_PROPERTY_TYPE_0, gnu_desc,
		       sizeof(gnu_desc), 8);
	n += telf_note(notes + n, 4, "Xen", 1 /* XEN_ELFNOTE_ENTRY */,
		       &virt_entry, 8, 8);
	n += telf_note(notes + n, 4, "Xen", 18, &entry, 4, 8);
	telf_set_notes(&d, notes, n);
	d.seg[2].align = 8;
	b = telf_build(&d);
	expect_accept(&b, &img);
	cr_expect_eq(img.entry, TELF_ENTRY + 8);
}

/* The boot area is off limits, but the page below it and RAM above it are not. */
Test(loader, segments_adjacent_to_boot_area)
{
	struct telf d = telf_good(false);
	struct pvh_image img;
	struct tbuf b;

	d.seg[1].paddr = 0;
	d.seg[1].filesz = 0x100;
	d.seg[1].memsz = LULL_START_INFO_GPA;
	d.seg[3] = (struct tseg){ PT_LOAD, PF_R, LULL_BOOT_AREA_END, 16, 16,
				  8,	   NULL };
	d.nsegs = 4;
	b = telf_build(&d);
	expect_accept(&b, &img);
	cr_expect_eq(img.load_start, 0);
	cr_expect_eq(img.load_end, TELF_CODE_GPA + TELF_CODE_SIZE);
}

/* Segments of other types are never read, so their contents do not matter. */
Test(loader, ignores_other_segment_types)
{
	struct telf d = telf_good(true);
	struct pvh_image img;
	struct tbuf b;

	d.seg[3] =
		(struct tseg){ PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 16, NULL };
	d.nsegs = 4;
	b = telf_build(&d);
	tbuf_set_ph(&b, 3, PH_OFFSET, UINT64_MAX);
	expect_accept(&b, &img);
}

Test(loader, truncated_anywhere)
{
	for (int is64 = 0; is64 < 2; is64++) {
		struct telf d = telf_good(is64);
		struct tbuf good = telf_build(&d);

		/* Every proper prefix, each in an exact-size buffer so ASan sees over-reads. */
		for (size_t len = 0; len < good.size; len++) {
			struct tbuf b = tbuf_copy(&good, len);
			struct pvh_image img;
			char err[256] = "";
			int ret;

			ret = pvh_load_elf(b.bytes, b.size, ram, RAM_SIZE, &img,
					   err, sizeof(err));
			cr_assert_lt(ret, 0,
				     "ELF%d prefix of %zu bytes accepted",
				     is64 ? 64 : 32, len);
			cr_assert(err[0], "prefix of %zu bytes: no message",
				  len);
			tbuf_free(&b);
		}
		tbuf_free(&good);
	}
	cr_assert(ram_is_zero(0, 0x400000));
}

Test(loader, truncated_header_message)
{
	struct telf d = telf_good(true);
	struct tbuf good = telf_build(&d);
	struct tbuf b = tbuf_copy(&good, sizeof(Elf64_Ehdr) - 1);

	expect_reject(&b, RAM_SIZE, ENOEXEC, "truncated");
	b = tbuf_copy(&good, 10);
	expect_reject(&b, RAM_SIZE, ENOEXEC, "truncated");
	tbuf_free(&good);
}

Test(loader, zero_length_file)
{
	struct telf d = telf_good(true);
	struct tbuf good = telf_build(&d);
	struct tbuf b = tbuf_copy(&good, 0);

	expect_reject(&b, RAM_SIZE, ENOEXEC, "empty");
	tbuf_free(&good);
}

Test(loader, bad_magic)
{
	struct telf d = telf_good(true);
	struct tbuf b = telf_build(&d);

	b.bytes[1] = 'e';
	expect_reject(&b, RAM_SIZE, ENOEXEC, "magic");
}

Test(loader, bad_class)
{
	struct telf d = telf_good(true);
	struct tbuf b = telf_build(&d);

	b.bytes[EI_CLASS] = 3;
	expect_reject(&b, RAM_SIZE, ENOEXEC, "class");
}

Test(loader, big_endian)
{
	struct telf d = telf_good(false);
	struct tbuf b = telf_build(&d);

	b.bytes[EI_DATA] = ELFDATA2MSB;
	expect_reject(&b, RAM_SIZE, ENOEXEC, "little-endian");
}

Test(loader, bad_version)
{
	struct telf d = telf_good(true);
	struct tbuf b = telf_build(&d);

	b.bytes[EI_VERSION] = 2;
	expect_reject(&b, RAM_SIZE, ENOEXEC, "version");
	b = telf_build(&d);
	tbuf_set_eh(&b, EH_VERSION, 0);
	expect_reject(&b, RAM_SIZE, ENOEXEC, "version");
}

Test(loader, wrong_machine)
{
	struct telf d = telf_good(true);

	d.machine = EM_AARCH64;
	expect_reject_desc(&d, ENOEXEC, "AArch64");
	d.machine = 0x1234;
	expect_reject_desc(&d, ENOEXEC, "4660");
}

Test(loader, pie_and_objects_rejected)
{
	struct telf d = telf_good(true);

	d.type = ET_DYN;
	expect_reject_desc(&d, ENOEXEC, "ET_DYN");
	d.type = ET_REL;
	expect_reject_desc(&d, ENOEXEC, "relocatable");
	d.type = ET_CORE;
	expect_reject_desc(&d, ENOEXEC, "not an executable");
}

Test(loader, bad_phdr_table)
{
	for (int is64 = 0; is64 < 2; is64++) {
		struct telf d = telf_good(is64);
		struct tbuf b;

		b = telf_build(&d);
		tbuf_set_eh(&b, EH_PHENTSIZE,
			    is64 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr));
		expect_reject(&b, RAM_SIZE, ENOEXEC, "entry size");

		b = telf_build(&d);
		tbuf_set_eh(&b, EH_PHNUM, PN_XNUM);
		expect_reject(&b, RAM_SIZE, ENOEXEC, "program headers");

		b = telf_build(&d);
		tbuf_set_eh(&b, EH_PHNUM, 0);
		expect_reject(&b, RAM_SIZE, ENOEXEC, "no program headers");

		b = telf_build(&d);
		tbuf_set_eh(&b, EH_PHNUM,
			    100); /* more entries than the file holds */
		expect_reject(&b, RAM_SIZE, ENOEXEC,
			      "past the end of the file");

		b = telf_build(&d);
		tbuf_set_eh(&b, EH_PHOFF, b.size - 8);
		expect_reject(&b, RAM_SIZE, ENOEXEC,
			      "past the end of the file");

		b = telf_build(&d);
		tbuf_set_eh(&b, EH_PHOFF,
			    UINT64_MAX - 16); /* wraps in 64 bits */
		expect_reject(&b, RAM_SIZE, ENOEXEC,
			      "past the end of the file");
	}
}

Test(loader, segment_file_range_outside_file)
{
	for (int is64 = 0; is64 < 2; is64++) {
		struct telf d = telf_good(is64);
		struct tbuf b;

		b = telf_build(&d);
		tbuf_set_ph(&b, 0, PH_OFFSET, b.size - 10);
		expect_reject(&b, RAM_SIZE, ENOEXEC,
			      "past the end of the file");

		b = telf_build(&d);
		tbuf_set_ph(&b, 0, PH_OFFSET,
			    UINT64_MAX - 8); /* offset + filesz wraps */
		expect_reject(&b, RAM_SIZE, ENOEXEC,
			      "past the end of the file");

		b = telf_build(&d);
		tbuf_set_ph(&b, 2, PH_FILESZ, 4096); /* the note segment */
		expect_reject(&b, RAM_SIZE, ENOEXEC,
			      "past the end of the file");
	}
}

Test(loader, filesz_larger_than_memsz)
{
	struct telf d = telf_good(true);

	d.seg[0].memsz = TELF_CODE_SIZE - 1;
	expect_reject_desc(&d, ENOEXEC, "p_filesz");
}

Test(loader, segment_outside_ram)
{
	struct telf d = telf_good(false);
	struct tbuf b;

	d.seg[1].paddr = RAM_SIZE - 0x1000; /* bss runs 0x2000 past the end */
	expect_reject_desc(&d, ERANGE, "outside guest RAM (16 MiB)");

	d = telf_good(false);
	d.seg[0].paddr = 0xfffff000; /* ELF32: the top of the 32-bit space */
	expect_reject_desc(&d, ERANGE, "outside guest RAM");

	d = telf_good(true);
	b = telf_build(&d);
	tbuf_set_ph(&b, 1, PH_PADDR,
		    UINT64_MAX - 0x100); /* paddr + memsz wraps */
	expect_reject(&b, RAM_SIZE, ERANGE, "outside guest RAM");
}

Test(loader, huge_memsz)
{
	struct telf d = telf_good(true);
	struct tbuf b = telf_build(&d);

	tbuf_set_ph(&b, 1, PH_MEMSZ, 1ull << 62);
	expect_reject(&b, RAM_SIZE, ERANGE, "more than guest RAM");

	d = telf_good(false);
	b = telf_build(&d);
	tbuf_set_ph(&b, 1, PH_MEMSZ, UINT32_MAX);
	expect_reject(&b, RAM_SIZE, ERANGE, "more than guest RAM");
}

Test(loader, overlaps_boot_area)
{
	static const struct {
		uint64_t paddr, memsz;
	} bad[] = {
		{ LULL_START_INFO_GPA, 16 }, /* start_info itself */
		{ LULL_CMDLINE_GPA + 0x800, 16 }, /* inside the command line */
		{ 0, LULL_START_INFO_GPA + 1 }, /* grows into it from below */
		{ LULL_BOOT_AREA_END - 1, 16 }, /* its last byte */
		{ 0, 0x10000 }, /* covers all of it */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct telf d = telf_good(i & 1);

		d.seg[1].paddr = bad[i].paddr;
		d.seg[1].filesz = 8;
		d.seg[1].memsz = bad[i].memsz;
		expect_reject_desc(&d, ERANGE, "boot area");
	}
}

Test(loader, overlaps_acpi_area)
{
	static const struct {
		uint64_t paddr, memsz;
	} bad[] = {
		{ LULL_ACPI_RSDP_GPA, 16 }, /* the RSDP */
		{ LULL_ACPI_RSDP_GPA - 8, 16 }, /* grows into it from below */
		{ LULL_ACPI_AREA_END - 1, 16 }, /* its last byte */
		{ 0x80000, 0x80000 }, /* covers all of it */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct telf d = telf_good(i & 1);

		d.seg[1].paddr = bad[i].paddr;
		d.seg[1].filesz = 8;
		d.seg[1].memsz = bad[i].memsz;
		expect_reject_desc(&d, ERANGE, "ACPI area");
	}
}

Test(loader, overlaps_reset_vector)
{
	static const struct {
		uint64_t paddr, memsz;
	} bad[] = {
		{ LULL_RESET_VECTOR_GPA, 1 }, /* its first byte */
		{ LULL_RESET_VECTOR_GPA - 8, 16 }, /* grows into it from below */
		{ LULL_RESET_VECTOR_END - 1, 16 }, /* its last byte, into 1 MiB */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct telf d = telf_good(i & 1);

		d.seg[1].paddr = bad[i].paddr;
		d.seg[1].filesz = 1;
		d.seg[1].memsz = bad[i].memsz;
		expect_reject_desc(&d, ERANGE, "reset vector");
	}
}

/* The rest of the reserved hole below 1 MiB, between the ACPI area and
 * the reset vector, is the guest's to load into. */
Test(loader, segments_adjacent_to_acpi_area)
{
	struct telf d = telf_good(true);
	struct pvh_image img;
	struct tbuf b;

	d.seg[1].paddr = 0xA0000;
	d.seg[1].filesz = 8;
	d.seg[1].memsz = LULL_ACPI_RSDP_GPA - 0xA0000;
	d.seg[3] = (struct tseg){ .type = PT_LOAD,
				  .flags = PF_R,
				  .paddr = LULL_ACPI_AREA_END,
				  .filesz = 16,
				  .memsz = LULL_RESET_VECTOR_GPA - LULL_ACPI_AREA_END,
				  .align = 8 };
	d.nsegs = 4;
	b = telf_build(&d);
	expect_accept(&b, &img);
	cr_expect_eq(img.load_start, 0xA0000);
}

Test(loader, overlapping_segments)
{
	struct telf d = telf_good(true);

	d.seg[1].paddr = TELF_CODE_GPA + TELF_CODE_SIZE - 1;
	expect_reject_desc(&d, ENOEXEC, "overlap");

	/* Overlap through the bss tail of the first one. */
	d = telf_good(false);
	d.seg[3] = (struct tseg){
		PT_LOAD, PF_R, TELF_DATA_GPA + TELF_DATA_MEMSZ - 4, 4, 4,
		8,	 NULL
	};
	d.nsegs = 4;
	expect_reject_desc(&d, ENOEXEC, "segments 1 and 3 overlap");
}

Test(loader, no_pt_load)
{
	struct telf d = telf_good(true);

	d.seg[0] = d.seg[2];
	d.nsegs = 1;
	expect_reject_desc(&d, ENOEXEC, "nothing to load");

	/* Empty PT_LOADs load nothing either. */
	d = telf_good(true);
	d.seg[0].filesz = d.seg[0].memsz = 0;
	d.seg[1].filesz = d.seg[1].memsz = 0;
	expect_reject_desc(&d, ENOEXEC, "nothing to load");
}

Test(loader, no_pvh_note)
{
	struct telf d = telf_good(true);
	uint32_t entry = TELF_ENTRY;
	uint8_t note[64];

	d.nsegs = 2; /* no PT_NOTE at all */
	expect_reject_desc(&d, ENOEXEC, "no PVH entry note");

	/* Notes that are not the PVH one: wrong type, wrong name, name without its NUL. */
	d = telf_good(false);
	telf_set_notes(&d, note, telf_note(note, 4, "Xen", 1, &entry, 4, 4));
	expect_reject_desc(&d, ENOEXEC, "lull boots PVH guests only");
	telf_set_notes(&d, note, telf_note(note, 4, "Xe", 18, &entry, 4, 4));
	expect_reject_desc(&d, ENOEXEC, "no PVH entry note");
	telf_set_notes(&d, note, telf_note(note, 3, "Xen", 18, &entry, 4, 4));
	expect_reject_desc(&d, ENOEXEC, "no PVH entry note");
}

static void expect_note_reject(const uint8_t *note, size_t len,
			       const char *word)
{
	for (int is64 = 0; is64 < 2; is64++) {
		struct telf d = telf_good(is64);

		telf_set_notes(&d, note, len);
		expect_reject_desc(&d, ENOEXEC, word);
	}
}

Test(loader, note_with_bogus_sizes)
{
	uint32_t entry = TELF_ENTRY;
	uint8_t note[64];
	size_t len = telf_note(note, 4, "Xen", 18, &entry, 4, 4);
	uint32_t v;

	v = 0xffffffff; /* namesz */
	memcpy(note, &v, 4);
	expect_note_reject(note, len, "name size");
	v = 13; /* namesz just past the end */
	memcpy(note, &v, 4);
	expect_note_reject(note, len, "name size");

	len = telf_note(note, 4, "Xen", 18, &entry, 4, 4);
	v = 0xfffffffc; /* descsz */
	memcpy(note + 4, &v, 4);
	expect_note_reject(note, len, "descriptor size");
	v = 5;
	memcpy(note + 4, &v, 4);
	expect_note_reject(note, len, "descriptor size");

	len = telf_note(note, 4, "Xen", 18, &entry, 4, 4);
	expect_note_reject(note, 8,
			   "note header"); /* segment cut inside the header */
	expect_note_reject(note, len + 4,
			   "note header"); /* trailing junk after the note */
}

Test(loader, pvh_descriptor_wrong_size_or_too_high)
{
	uint64_t entry = TELF_ENTRY;
	uint8_t note[64];
	size_t len;

	len = telf_note(note, 4, "Xen", 18, &entry, 2, 4);
	expect_note_reject(note, len, "2-byte descriptor");

	entry |= 1ull << 32;
	len = telf_note(note, 4, "Xen", 18, &entry, 8, 4);
	expect_note_reject(note, len, "above 4 GiB");
}

Test(loader, disagreeing_pvh_notes)
{
	uint32_t a = TELF_ENTRY, b = TELF_ENTRY + 4;
	uint8_t notes[64];
	size_t len;

	len = telf_note(notes, 4, "Xen", 18, &a, 4, 4);
	len += telf_note(notes + len, 4, "Xen", 18, &b, 4, 4);
	expect_note_reject(notes, len, "disagree");
}

static void expect_entry_reject(uint32_t entry)
{
	uint8_t note[64];

	expect_note_reject(note, telf_note(note, 4, "Xen", 18, &entry, 4, 4),
			   "entry");
}

Test(loader, entry_outside_segments)
{
	expect_entry_reject(0x50000); /* nowhere */
	expect_entry_reject(TELF_CODE_GPA - 1); /* just below the code */
	expect_entry_reject(TELF_CODE_GPA + TELF_CODE_SIZE); /* just past it */
	expect_entry_reject(
		TELF_DATA_GPA); /* in a segment that is not executable */
}

Test(loader, entry_in_bss_rejected)
{
	struct telf d = telf_good(true);
	uint32_t entry = TELF_DATA_GPA + TELF_DATA_FILESZ + 16;
	uint8_t note[64];

	d.seg[1].flags |= PF_X;
	telf_set_notes(&d, note, telf_note(note, 4, "Xen", 18, &entry, 4, 4));
	expect_reject_desc(&d, ENOEXEC, "entry");
}

Test(loader, null_or_tiny_error_buffer)
{
	struct telf d = telf_good(true);
	struct tbuf b = telf_build(&d);
	struct pvh_image img;
	char err[8];

	b.bytes[0] = 0;
	cr_assert_eq(
		pvh_load_elf(b.bytes, b.size, ram, RAM_SIZE, &img, NULL, 0),
		-ENOEXEC);
	memset(err, 'x', sizeof(err));
	cr_assert_eq(pvh_load_elf(b.bytes, b.size, ram, RAM_SIZE, &img, err,
				  sizeof(err)),
		     -ENOEXEC);
	cr_assert_eq(strlen(err), sizeof(err) - 1,
		     "message not truncated to the buffer");
	tbuf_free(&b);
}
