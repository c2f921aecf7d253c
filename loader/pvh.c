// SPDX-License-Identifier: MIT
/*
 * PVH boot, host side: the ELF loader and the hvm_start_info builder.
 *
 * The loader checks the untrusted file in three passes and writes guest RAM
 * only after all of them have passed:
 *   1. the ELF header: identity, machine, type, program header table bounds;
 *   2. every program header: file range, guest range, boot and ACPI areas,
 *      overlaps;
 *   3. the notes of every PT_NOTE segment: the PVH entry, which must point
 *      into the file-backed bytes of an executable PT_LOAD segment.
 * ELF32 and ELF64 headers are widened into one struct as they are read, so
 * each check exists once. Fields are copied out with memcpy because the
 * file buffer need not be aligned. All sizes are checked with
 * __builtin_add_overflow or bounded first so that the products cannot wrap.
 *
 * The PVH note is looked for in PT_NOTE segments only, not in SHT_NOTE
 * sections: QEMU, Firecracker and cloud-hypervisor all find it that way, and
 * the same guest must boot on QEMU's microvm.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "loader/errmsg.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the loader reads little-endian ELF fields in host order"
#endif

/* More program headers than any guest has; bounds the quadratic overlap check. */
#define PVH_MAX_PHDRS 128u

#define MiB (1ull << 20)

typedef unsigned long long
	ull; /* printf's %llx; uint64_t is unsigned long here */

/* The memory map written after start_info; see pvh_write_start_info. */
#define PVH_LOW_RAM_END 0xA0000ull
#define PVH_HIGH_RAM_START (1 * MiB)
#define PVH_MEMMAP_GPA \
	(LULL_START_INFO_GPA + sizeof(struct lull_hvm_start_info))

_Static_assert(PVH_MEMMAP_GPA % 8 == 0,
	       "memory map entries must be 8-byte aligned");
_Static_assert(PVH_MEMMAP_GPA + PVH_MEMMAP_MAX *
					sizeof(struct lull_hvm_memmap_entry) <=
		       LULL_CMDLINE_GPA,
	       "start_info and memory map must end before the command line");
_Static_assert(PVH_MEMMAP_GPA + PVH_MEMMAP_MAX *
					sizeof(struct lull_hvm_memmap_entry) <=
			       LULL_MODLIST_GPA &&
		       LULL_MODLIST_GPA + sizeof(struct lull_hvm_modlist_entry) <=
			       LULL_CMDLINE_GPA &&
		       LULL_MODLIST_GPA % 8 == 0,
	       "the module list must lie between the memory map and the command line");
_Static_assert(LULL_CMDLINE_GPA + LULL_CMDLINE_MAX <= LULL_BOOT_AREA_END,
	       "the command line must fit in the boot area");
_Static_assert(LULL_ACPI_RSDP_GPA >= PVH_LOW_RAM_END &&
		       LULL_ACPI_AREA_END <= PVH_HIGH_RAM_START,
	       "the ACPI area must lie in the range the memory map reserves");

/* "16 MiB" when exact, else the byte count: for RAM sizes in messages. */
static const char *size_str(char buf[32], uint64_t n)
{
	if (n && n % (1024 * MiB) == 0)
		snprintf(buf, 32, "%llu GiB",
			 (unsigned long long)(n / (1024 * MiB)));
	else if (n && n % MiB == 0)
		snprintf(buf, 32, "%llu MiB", (unsigned long long)(n / MiB));
	else
		snprintf(buf, 32, "%llu bytes", (unsigned long long)n);
	return buf;
}

struct elf_header {
	bool is64;
	uint16_t type;
	uint16_t machine;
	uint64_t phoff;
	uint16_t phentsize;
	uint16_t phnum;
	uint64_t entry; /* e_entry */
};

struct segment {
	uint32_t type;
	uint32_t flags;
	uint64_t offset;
	uint64_t paddr;
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
};

struct loader {
	const uint8_t *file;
	size_t file_size;
	uint64_t ram_size;
	char *err;
	size_t err_len;
	struct elf_header eh;
};

#define loader_fail(l, errnum, ...) \
	errmsg((l)->err, (l)->err_len, errnum, __VA_ARGS__)

static const char *machine_name(uint16_t machine)
{
	switch (machine) {
	case EM_NONE:
		return "none";
	case EM_ARM:
		return "ARM";
	case EM_AARCH64:
		return "AArch64";
	case EM_RISCV:
		return "RISC-V";
	case EM_PPC:
		return "PowerPC";
	case EM_PPC64:
		return "PowerPC64";
	case EM_S390:
		return "S/390";
	case EM_MIPS:
		return "MIPS";
	case EM_SPARCV9:
		return "SPARC V9";
	case EM_IA_64:
		return "IA-64";
	default:
		return "unknown";
	}
}

static int check_ident(struct loader *l)
{
	const uint8_t *id = l->file;

	if (l->file_size == 0)
		return loader_fail(l, ENOEXEC, "the file is empty");
	if (l->file_size < EI_NIDENT)
		return loader_fail(
			l, ENOEXEC,
			"truncated ELF header: the file is %zu bytes",
			l->file_size);
	if (memcmp(id, ELFMAG, SELFMAG) != 0)
		return loader_fail(l, ENOEXEC, "not an ELF file (bad magic)");
	if (id[EI_CLASS] != ELFCLASS32 && id[EI_CLASS] != ELFCLASS64)
		return loader_fail(
			l, ENOEXEC,
			"bad ELF class %u: expected ELF32 (1) or ELF64 (2)",
			id[EI_CLASS]);
	if (id[EI_DATA] != ELFDATA2LSB)
		return loader_fail(
			l, ENOEXEC,
			"ELF data encoding %u is not little-endian, as x86 guests are",
			id[EI_DATA]);
	if (id[EI_VERSION] != EV_CURRENT)
		return loader_fail(l, ENOEXEC,
				   "bad ELF identification version %u",
				   id[EI_VERSION]);
	return 0;
}

static int read_elf_header(struct loader *l)
{
	struct elf_header *eh = &l->eh;
	uint32_t version;

	eh->is64 = l->file[EI_CLASS] == ELFCLASS64;
	if (eh->is64) {
		Elf64_Ehdr e;

		if (l->file_size < sizeof(e))
			goto truncated;
		memcpy(&e, l->file, sizeof(e));
		version = e.e_version;
		eh->type = e.e_type;
		eh->machine = e.e_machine;
		eh->phoff = e.e_phoff;
		eh->phentsize = e.e_phentsize;
		eh->phnum = e.e_phnum;
		eh->entry = e.e_entry;
	} else {
		Elf32_Ehdr e;

		if (l->file_size < sizeof(e))
			goto truncated;
		memcpy(&e, l->file, sizeof(e));
		version = e.e_version;
		eh->type = e.e_type;
		eh->machine = e.e_machine;
		eh->phoff = e.e_phoff;
		eh->phentsize = e.e_phentsize;
		eh->phnum = e.e_phnum;
		eh->entry = e.e_entry;
	}
	if (version != EV_CURRENT)
		return loader_fail(l, ENOEXEC, "bad ELF version %u", version);
	return 0;

truncated:
	return loader_fail(
		l, ENOEXEC,
		"truncated ELF header: the file is %zu bytes, an ELF%d header is %zu",
		l->file_size, eh->is64 ? 64 : 32,
		eh->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr));
}

static int check_machine_and_type(struct loader *l)
{
	const struct elf_header *eh = &l->eh;

	if (eh->machine != EM_X86_64 && eh->machine != EM_386)
		return loader_fail(
			l, ENOEXEC,
			"unsupported machine %s (e_machine %u): lull runs x86 guests (x86-64 or i386)",
			machine_name(eh->machine), eh->machine);

	switch (eh->type) {
	case ET_EXEC:
		return 0;
	case ET_DYN:
		return loader_fail(
			l, ENOEXEC,
			"position-independent ELF (ET_DYN) is not supported: link the guest at a fixed address (ET_EXEC)");
	case ET_REL:
		return loader_fail(
			l, ENOEXEC,
			"ELF is a relocatable object (ET_REL), not an executable: link it first");
	default:
		return loader_fail(l, ENOEXEC,
				   "ELF type %u is not an executable (ET_EXEC)",
				   eh->type);
	}
}

static int check_phdr_table(struct loader *l)
{
	const struct elf_header *eh = &l->eh;
	size_t want = eh->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	uint64_t end;

	if (eh->phnum == 0)
		return loader_fail(
			l, ENOEXEC,
			"ELF has no program headers: nothing to load");
	if (eh->phnum > PVH_MAX_PHDRS)
		return loader_fail(
			l, ENOEXEC,
			"ELF claims %u program headers; lull accepts at most %u",
			eh->phnum, PVH_MAX_PHDRS);
	if (eh->phentsize != want)
		return loader_fail(
			l, ENOEXEC,
			"program header entry size is %u bytes, ELF%d needs %zu",
			eh->phentsize, eh->is64 ? 64 : 32, want);
	/* phnum * phentsize <= 128 * 56: only the addition can overflow. */
	if (__builtin_add_overflow(eh->phoff, (uint64_t)eh->phnum * want,
				   &end) ||
	    end > l->file_size)
		return loader_fail(
			l, ENOEXEC,
			"program header table (offset 0x%llx, %u entries) runs past the end of the file (%zu bytes)",
			(ull)eh->phoff, eh->phnum, l->file_size);
	return 0;
}

#define WIDEN_PHDR(ph)                                          \
	(struct segment)                                        \
	{                                                       \
		.type = (ph).p_type, .flags = (ph).p_flags,     \
		.offset = (ph).p_offset, .paddr = (ph).p_paddr, \
		.filesz = (ph).p_filesz, .memsz = (ph).p_memsz, \
		.align = (ph).p_align,                          \
	}

/* Only after check_phdr_table: entry i lies inside the file. */
static struct segment read_segment(const struct loader *l, unsigned int i)
{
	const uint8_t *p =
		l->file + l->eh.phoff + (uint64_t)i * l->eh.phentsize;
	struct segment s;

	if (l->eh.is64) {
		Elf64_Phdr ph;

		memcpy(&ph, p, sizeof(ph));
		s = WIDEN_PHDR(ph);
	} else {
		Elf32_Phdr ph;

		memcpy(&ph, p, sizeof(ph));
		s = WIDEN_PHDR(ph);
	}
	return s;
}

static int check_file_range(struct loader *l, unsigned int i,
			    const struct segment *s)
{
	uint64_t end;

	if (__builtin_add_overflow(s->offset, s->filesz, &end) ||
	    end > l->file_size)
		return loader_fail(
			l, ENOEXEC,
			"segment %u file range (offset 0x%llx, 0x%llx bytes) runs past the end of the file (%zu bytes)",
			i, (ull)s->offset, (ull)s->filesz, l->file_size);
	return 0;
}

static bool ranges_overlap(uint64_t a, uint64_t a_end, uint64_t b,
			   uint64_t b_end)
{
	return a < b_end && b < a_end;
}

/*
 * A PT_LOAD segment: fits the file, fits guest RAM, keeps off the boot area
 * and the ACPI area (lull writes both after loading the image).
 */
static int check_load_segment(struct loader *l, unsigned int i,
			      const struct segment *s)
{
	char ram[32];
	uint64_t end;
	int ret;

	ret = check_file_range(l, i, s);
	if (ret)
		return ret;
	if (s->filesz > s->memsz)
		return loader_fail(
			l, ENOEXEC,
			"segment %u has p_filesz 0x%llx larger than p_memsz 0x%llx",
			i, (ull)s->filesz, (ull)s->memsz);
	if (s->memsz > l->ram_size)
		return loader_fail(
			l, ERANGE,
			"segment %u needs 0x%llx bytes of memory, more than guest RAM (%s)",
			i, (ull)s->memsz, size_str(ram, l->ram_size));
	if (__builtin_add_overflow(s->paddr, s->memsz, &end) ||
	    end > l->ram_size)
		return loader_fail(
			l, ERANGE,
			"segment %u [0x%llx, +0x%llx) lies outside guest RAM (%s)",
			i, (ull)s->paddr, (ull)s->memsz,
			size_str(ram, l->ram_size));
	if (s->memsz && ranges_overlap(s->paddr, end, LULL_START_INFO_GPA,
				       LULL_BOOT_AREA_END))
		return loader_fail(
			l, ERANGE,
			"segment %u [0x%llx, 0x%llx) overlaps the boot area [0x%x, 0x%x) where lull puts start_info and the command line",
			i, (ull)s->paddr, (ull)end, LULL_START_INFO_GPA,
			LULL_BOOT_AREA_END);
	if (s->memsz && ranges_overlap(s->paddr, end, LULL_ACPI_RSDP_GPA,
				       LULL_ACPI_AREA_END))
		return loader_fail(
			l, ERANGE,
			"segment %u [0x%llx, 0x%llx) overlaps the ACPI area [0x%x, 0x%x) where lull puts its ACPI tables",
			i, (ull)s->paddr, (ull)end, LULL_ACPI_RSDP_GPA,
			LULL_ACPI_AREA_END);
	if (s->memsz && ranges_overlap(s->paddr, end, LULL_RESET_VECTOR_GPA,
				       LULL_RESET_VECTOR_END))
		return loader_fail(
			l, ERANGE,
			"segment %u [0x%llx, 0x%llx) overlaps the reset vector [0x%x, 0x%x) where lull puts its reset code",
			i, (ull)s->paddr, (ull)end, LULL_RESET_VECTOR_GPA,
			LULL_RESET_VECTOR_END);
	return 0;
}

/* Earlier PT_LOAD segments were checked already, so their ranges are sane. */
static int check_no_overlap(struct loader *l, unsigned int i,
			    const struct segment *s)
{
	for (unsigned int j = 0; j < i; j++) {
		struct segment o = read_segment(l, j);

		if (o.type != PT_LOAD)
			continue;
		if (ranges_overlap(s->paddr, s->paddr + s->memsz, o.paddr,
				   o.paddr + o.memsz))
			return loader_fail(
				l, ENOEXEC,
				"segments %u and %u overlap in guest memory ([0x%llx, 0x%llx) and [0x%llx, 0x%llx))",
				j, i, (ull)o.paddr, (ull)(o.paddr + o.memsz),
				(ull)s->paddr, (ull)(s->paddr + s->memsz));
	}
	return 0;
}

static int check_segments(struct loader *l, struct pvh_image *img)
{
	unsigned int loads = 0;
	int ret;

	img->load_start = UINT64_MAX;
	img->load_end = 0;
	for (unsigned int i = 0; i < l->eh.phnum; i++) {
		struct segment s = read_segment(l, i);

		if (s.type == PT_NOTE) {
			ret = check_file_range(l, i, &s);
			if (ret)
				return ret;
			continue;
		}
		if (s.type != PT_LOAD)
			continue;
		ret = check_load_segment(l, i, &s);
		if (!ret)
			ret = check_no_overlap(l, i, &s);
		if (ret)
			return ret;
		if (s.memsz == 0)
			continue;
		loads++;
		if (s.paddr < img->load_start)
			img->load_start = s.paddr;
		if (s.paddr + s.memsz > img->load_end)
			img->load_end = s.paddr + s.memsz;
	}
	if (!loads)
		return loader_fail(
			l, ENOEXEC,
			"ELF has no non-empty PT_LOAD segment: nothing to load");
	return 0;
}

static uint32_t read_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

/* Takes the entry out of a PVH note's descriptor; *entry is set once. */
static int take_pvh_entry(struct loader *l, const uint8_t *desc,
			  uint32_t descsz, bool *found, uint32_t *entry)
{
	uint64_t value;

	if (descsz == 4) {
		value = read_u32(desc);
	} else if (descsz == 8) {
		memcpy(&value, desc, sizeof(value));
		if (value > UINT32_MAX)
			return loader_fail(
				l, ENOEXEC,
				"PVH entry 0x%llx is above 4 GiB: the entry must be a 32-bit physical address",
				(ull)value);
	} else {
		return loader_fail(
			l, ENOEXEC,
			"PVH entry note has a %u-byte descriptor; expected 4 or 8",
			descsz);
	}
	if (*found && *entry != value)
		return loader_fail(
			l, ENOEXEC,
			"two PVH entry notes disagree (0x%x and 0x%llx)",
			*entry, (ull)value);
	*found = true;
	*entry = value;
	return 0;
}

/*
 * Walks the notes of one PT_NOTE segment (bounds checked by check_segments).
 * Each note is a 12-byte header (namesz, descsz, type), the name and the
 * descriptor, each padded to the note alignment: 4 bytes in practice for
 * both classes, 8 for the segments that say so in p_align (GNU property
 * notes), as binutils reads them.
 */
static int scan_notes(struct loader *l, unsigned int i, const struct segment *s,
		      bool *found, uint32_t *entry, bool *all_vcpus)
{
	const uint8_t *seg = l->file + s->offset;
	uint64_t align = s->align == 8 ? 8 : 4;
	uint64_t pos = 0;

	while (pos < s->filesz) {
		uint32_t namesz, descsz, type;
		uint64_t name, desc;
		int ret;

		if (s->filesz - pos < 12)
			return loader_fail(
				l, ENOEXEC,
				"note at offset 0x%llx of segment %u: the note header runs past the segment",
				(ull)pos, i);
		namesz = read_u32(seg + pos);
		descsz = read_u32(seg + pos + 4);
		type = read_u32(seg + pos + 8);
		/* Each term is below 2^33 and pos below the file size: no wrap. */
		name = pos + 12;
		desc = name + align_up(namesz, align);
		if (name + namesz > s->filesz)
			return loader_fail(
				l, ENOEXEC,
				"note at offset 0x%llx of segment %u: name size %u runs past the segment",
				(ull)pos, i, namesz);
		if (desc + descsz > s->filesz)
			return loader_fail(
				l, ENOEXEC,
				"note at offset 0x%llx of segment %u: descriptor size %u runs past the segment",
				(ull)pos, i, descsz);
		if (namesz == sizeof("Xen") &&
		    memcmp(seg + name, "Xen", sizeof("Xen")) == 0 &&
		    type == LULL_PVH_NOTE_TYPE) {
			ret = take_pvh_entry(l, seg + desc, descsz, found,
					     entry);
			if (ret)
				return ret;
		}
		if (namesz == sizeof(LULL_NOTE_NAME) &&
		    memcmp(seg + name, LULL_NOTE_NAME,
			   sizeof(LULL_NOTE_NAME)) == 0 &&
		    type == LULL_NOTE_ALL_VCPUS_ENTER)
			*all_vcpus = true;
		pos = desc + align_up(descsz, align);
	}
	return 0;
}

static int find_pvh_entry(struct loader *l, uint32_t *entry, bool *all_vcpus)
{
	bool found = false;
	int ret;

	for (unsigned int i = 0; i < l->eh.phnum; i++) {
		struct segment s = read_segment(l, i);

		if (s.type != PT_NOTE)
			continue;
		ret = scan_notes(l, i, &s, &found, entry, all_vcpus);
		if (ret)
			return ret;
	}
	if (!found)
		return loader_fail(
			l, ENOEXEC,
			"no PVH entry note (Xen ELF note type 18): lull boots PVH guests only");
	return 0;
}

/* The entry must land on bytes that come from the file, in an executable segment. */
static int check_entry(struct loader *l, const char *what, uint64_t entry)
{
	for (unsigned int i = 0; i < l->eh.phnum; i++) {
		struct segment s = read_segment(l, i);

		if (s.type == PT_LOAD && (s.flags & PF_X) && entry >= s.paddr &&
		    entry - s.paddr < s.filesz)
			return 0;
	}
	return loader_fail(
		l, ENOEXEC,
		"%s 0x%llx is not inside the file bytes of any executable PT_LOAD segment",
		what, (ull)entry);
}

/* Copies the file part of each segment; the bss part is already zero. */
static void copy_segments(const struct loader *l, uint8_t *ram)
{
	for (unsigned int i = 0; i < l->eh.phnum; i++) {
		struct segment s = read_segment(l, i);

		if (s.type == PT_LOAD && s.filesz)
			memcpy(ram + s.paddr, l->file + s.offset, s.filesz);
	}
}

/* The checks both entry conventions share: header, program headers, segments. */
static int check_elf(struct loader *l, struct pvh_image *img)
{
	int ret = check_ident(l);

	if (!ret)
		ret = read_elf_header(l);
	if (!ret)
		ret = check_machine_and_type(l);
	if (!ret)
		ret = check_phdr_table(l);
	if (!ret)
		ret = check_segments(l, img);
	return ret;
}

int pvh_load_elf(const void *file, size_t file_size, void *ram,
		 uint64_t ram_size, struct pvh_image *img, char *err,
		 size_t err_len)
{
	struct loader l = {
		.file = file,
		.file_size = file_size,
		.ram_size = ram_size,
		.err = err,
		.err_len = err_len,
	};
	struct pvh_image out = { 0 };
	int ret;

	ret = check_elf(&l, &out);
	if (!ret)
		ret = find_pvh_entry(&l, &out.entry, &out.all_vcpus_enter);
	if (!ret)
		ret = check_entry(&l, "PVH entry", out.entry);
	if (ret)
		return ret;

	copy_segments(&l, ram);
	*img = out;
	return 0;
}

int pvh_load_elf_e_entry(const void *file, size_t file_size, void *ram,
			 uint64_t ram_size, struct pvh_image *img, char *err,
			 size_t err_len)
{
	struct loader l = {
		.file = file,
		.file_size = file_size,
		.ram_size = ram_size,
		.err = err,
		.err_len = err_len,
	};
	struct pvh_image out = { 0 };
	int ret;

	ret = check_elf(&l, &out);
	if (!ret && l.eh.entry > UINT32_MAX)
		ret = loader_fail(
			&l, ENOEXEC,
			"ELF entry point 0x%llx is above 4 GiB, out of reach of a 32-bit entry",
			(ull)l.eh.entry);
	if (!ret)
		ret = check_entry(&l, "ELF entry point", l.eh.entry);
	if (ret)
		return ret;

	copy_segments(&l, ram);
	out.entry = (uint32_t)l.eh.entry;
	*img = out;
	return 0;
}

/*
 * The memory map, e820 style, for both boot protocols (bzimage.c copies it
 * into boot_params). Below 1 MiB it is the PC layout QEMU's microvm
 * reports too: conventional RAM up to 0xA0000, then the legacy VGA/BIOS hole
 * as reserved, so a guest that works here works there. lull backs the hole
 * with RAM anyway (guest RAM is one flat mapping); reporting it reserved
 * keeps guests off it, and so off the ACPI tables lull puts there (acpi.h),
 * which an OS reads long after boot. For RAM between 640 KiB and 1 MiB the
 * reserved entry stops at ram_size, so no entry describes memory that does
 * not exist.
 * The boot area is reported as RAM: once the guest has read start_info and
 * the command line, that memory is the guest's.
 */
unsigned int pvh_memory_map(uint64_t ram_size,
			    struct lull_hvm_memmap_entry map[PVH_MEMMAP_MAX])
{
	unsigned int n = 0;
	uint64_t low_end =
		ram_size < PVH_LOW_RAM_END ? ram_size : PVH_LOW_RAM_END;

	map[n++] = (struct lull_hvm_memmap_entry){ .addr = 0,
						   .size = low_end,
						   .type = 1 };
	if (ram_size > PVH_LOW_RAM_END) {
		uint64_t hole_end = ram_size < PVH_HIGH_RAM_START ?
					    ram_size :
					    PVH_HIGH_RAM_START;

		map[n++] =
			(struct lull_hvm_memmap_entry){ .addr = PVH_LOW_RAM_END,
							.size = hole_end -
								PVH_LOW_RAM_END,
							.type = 2 };
	}
	if (ram_size > PVH_HIGH_RAM_START)
		map[n++] = (struct lull_hvm_memmap_entry){
			.addr = PVH_HIGH_RAM_START,
			.size = ram_size - PVH_HIGH_RAM_START,
			.type = 1
		};
	return n;
}

int64_t pvh_write_start_info(void *ram, uint64_t ram_size, const char *cmdline,
			     uint64_t rsdp_paddr, char *err, size_t err_len)
{
	struct lull_hvm_memmap_entry map[PVH_MEMMAP_MAX];
	struct lull_hvm_start_info si = {
		.magic = LULL_HVM_START_MAGIC,
		.version = 1,
		.rsdp_paddr = rsdp_paddr,
		.memmap_paddr = PVH_MEMMAP_GPA,
	};
	uint8_t *mem = ram;
	size_t len = 0;
	char buf[32];

	if (ram_size < LULL_BOOT_AREA_END)
		return errmsg(
			err, err_len, ERANGE,
			"guest RAM (%s) is too small to hold the boot area, which ends at 0x%x",
			size_str(buf, ram_size), LULL_BOOT_AREA_END);
	if (cmdline) {
		len = strnlen(cmdline, LULL_CMDLINE_MAX);
		if (len == LULL_CMDLINE_MAX)
			return errmsg(
				err, err_len, E2BIG,
				"command line is %zu bytes; the limit is %d",
				strlen(cmdline), LULL_CMDLINE_MAX - 1);
	}

	si.memmap_entries = pvh_memory_map(ram_size, map);
	memcpy(mem + PVH_MEMMAP_GPA, map, si.memmap_entries * sizeof(map[0]));
	if (len) {
		memcpy(mem + LULL_CMDLINE_GPA, cmdline, len + 1);
		si.cmdline_paddr = LULL_CMDLINE_GPA;
	}
	memcpy(mem + LULL_START_INFO_GPA, &si, sizeof(si));
	return LULL_START_INFO_GPA;
}

int pvh_add_initrd(void *ram, uint64_t ram_size, uint64_t paddr, uint64_t size,
		   char *err, size_t err_len)
{
	struct lull_hvm_modlist_entry mod = { .paddr = paddr, .size = size };
	struct lull_hvm_start_info si;
	uint8_t *mem = ram;
	char buf[32];

	if (ram_size < LULL_BOOT_AREA_END)
		return errmsg(
			err, err_len, ERANGE,
			"guest RAM (%s) is too small to hold the boot area, which ends at 0x%x",
			size_str(buf, ram_size), LULL_BOOT_AREA_END);
	if (!size || paddr > ram_size || size > ram_size - paddr)
		return errmsg(
			err, err_len, ERANGE,
			"the initrd [0x%llx, +0x%llx) is empty or not inside guest RAM (%s)",
			(ull)paddr, (ull)size, size_str(buf, ram_size));
	memcpy(&si, mem + LULL_START_INFO_GPA, sizeof(si));
	si.nr_modules = 1;
	si.modlist_paddr = LULL_MODLIST_GPA;
	memcpy(mem + LULL_MODLIST_GPA, &mod, sizeof(mod));
	memcpy(mem + LULL_START_INFO_GPA, &si, sizeof(si));
	return 0;
}
