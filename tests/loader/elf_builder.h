/* SPDX-License-Identifier: MIT */
/*
 * A tiny ELF writer for the loader tests: describe an image (class, machine,
 * segments), build it into an exact-size malloc'd buffer (so ASan sees any
 * read past its end), then patch single header fields to break it.
 *
 * Layout of a built image: Ehdr at 0, the program headers right after it,
 * then each segment's file bytes in order, 8-byte aligned.
 */
#ifndef LULL_TEST_ELF_BUILDER_H
#define LULL_TEST_ELF_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TELF_MAX_SEGS 8

struct tseg {
	uint32_t type;
	uint32_t flags;
	uint64_t paddr;
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
	const void
		*data; /* filesz bytes; NULL: telf_pattern(segment index, k) */
};

struct telf {
	bool is64;
	uint16_t machine;
	uint16_t type;
	unsigned int nsegs;
	struct tseg seg[TELF_MAX_SEGS];
};

struct tbuf {
	bool is64;
	uint8_t *bytes;
	size_t size;
	size_t seg_offset[TELF_MAX_SEGS];
};

/* Program header fields that tests patch after building. */
enum ph_field {
	PH_TYPE,
	PH_FLAGS,
	PH_OFFSET,
	PH_PADDR,
	PH_FILESZ,
	PH_MEMSZ,
	PH_ALIGN
};
/* ELF header fields that tests patch after building. */
enum eh_field {
	EH_TYPE,
	EH_MACHINE,
	EH_VERSION,
	EH_PHOFF,
	EH_PHENTSIZE,
	EH_PHNUM
};

/*
 * The reference good image: segment 0 is code (R+X) at TELF_CODE_GPA,
 * segment 1 data (R+W) at TELF_DATA_GPA with a bss tail, segment 2 the PVH
 * note pointing at TELF_ENTRY.
 */
#define TELF_CODE_GPA 0x100000u
#define TELF_CODE_SIZE 256u
#define TELF_DATA_GPA 0x200000u
#define TELF_DATA_FILESZ 64u
#define TELF_DATA_MEMSZ 0x3000u
#define TELF_ENTRY 0x100010u

struct telf telf_good(bool is64);

/* Writes a note (header, padded name, padded descriptor); returns its length. */
size_t telf_note(uint8_t *out, uint32_t namesz, const char *name, uint32_t type,
		 const void *desc, uint32_t descsz, unsigned int align);

/* Makes the note segment (segment 2 of telf_good) hold these len bytes. */
void telf_set_notes(struct telf *d, const void *notes, size_t len);

uint8_t telf_pattern(unsigned int seg, uint64_t k);

struct tbuf telf_build(const struct telf *d);
struct tbuf tbuf_copy(const struct tbuf *b,
		      size_t size); /* first size bytes, exact size */
void tbuf_free(struct tbuf *b);

void tbuf_set_ph(struct tbuf *b, unsigned int i, enum ph_field f, uint64_t v);
void tbuf_set_eh(struct tbuf *b, enum eh_field f, uint64_t v);

#endif
