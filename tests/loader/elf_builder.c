// SPDX-License-Identifier: MIT
#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "elf_builder.h"
#include "lull_abi.h"

static const uint8_t pvh_note_4[] = {
	4,
	0,
	0,
	0, /* namesz */
	4,
	0,
	0,
	0, /* descsz */
	18,
	0,
	0,
	0, /* type: XEN_ELFNOTE_PHYS32_ENTRY */
	'X',
	'e',
	'n',
	0, /* name */
	TELF_ENTRY & 0xff,
	(TELF_ENTRY >> 8) & 0xff,
	(TELF_ENTRY >> 16) & 0xff,
	TELF_ENTRY >> 24,
};

struct telf telf_good(bool is64)
{
	return (struct telf){
		.is64 = is64,
		.machine = is64 ? EM_X86_64 : EM_386,
		.type = ET_EXEC,
		.nsegs = 3,
		.seg = {
			{ PT_LOAD, PF_R | PF_X, TELF_CODE_GPA, TELF_CODE_SIZE, TELF_CODE_SIZE, 8, NULL },
			{ PT_LOAD, PF_R | PF_W, TELF_DATA_GPA, TELF_DATA_FILESZ, TELF_DATA_MEMSZ, 8, NULL },
			{ PT_NOTE, PF_R, 0, sizeof(pvh_note_4), sizeof(pvh_note_4), 4, pvh_note_4 },
		},
	};
}

static size_t pad(size_t v, unsigned int align)
{
	return (v + align - 1) / align * align;
}

size_t telf_note(uint8_t *out, uint32_t namesz, const char *name, uint32_t type,
		 const void *desc, uint32_t descsz, unsigned int align)
{
	size_t pos = 12;

	memset(out, 0, 12 + pad(strlen(name) + 1, align) + pad(descsz, align));
	memcpy(out, &namesz, 4);
	memcpy(out + 4, &descsz, 4);
	memcpy(out + 8, &type, 4);
	memcpy(out + pos, name, strlen(name) + 1);
	pos += pad(strlen(name) + 1, align);
	memcpy(out + pos, desc, descsz);
	return pos + pad(descsz, align);
}

void telf_set_notes(struct telf *d, const void *notes, size_t len)
{
	d->seg[2].data = notes;
	d->seg[2].filesz = len;
	d->seg[2].memsz = len;
}

uint8_t telf_pattern(unsigned int seg, uint64_t k)
{
	return (uint8_t)(seg * 31 + k * 7 + 1);
}

static void put(uint8_t *p, size_t width, uint64_t v)
{
	memcpy(p, &v, width); /* little-endian host: the low bytes come first */
}

static void write_ehdr(uint8_t *p, const struct telf *d)
{
	memcpy(p, ELFMAG, SELFMAG);
	p[EI_CLASS] = d->is64 ? ELFCLASS64 : ELFCLASS32;
	p[EI_DATA] = ELFDATA2LSB;
	p[EI_VERSION] = EV_CURRENT;
	if (d->is64) {
		Elf64_Ehdr e;

		memcpy(&e, p, sizeof(e));
		e.e_type = d->type;
		e.e_machine = d->machine;
		e.e_version = EV_CURRENT;
		e.e_entry = TELF_ENTRY;
		e.e_phoff = sizeof(Elf64_Ehdr);
		e.e_ehsize = sizeof(Elf64_Ehdr);
		e.e_phentsize = sizeof(Elf64_Phdr);
		e.e_phnum = d->nsegs;
		memcpy(p, &e, sizeof(e));
	} else {
		Elf32_Ehdr e;

		memcpy(&e, p, sizeof(e));
		e.e_type = d->type;
		e.e_machine = d->machine;
		e.e_version = EV_CURRENT;
		e.e_entry = TELF_ENTRY;
		e.e_phoff = sizeof(Elf32_Ehdr);
		e.e_ehsize = sizeof(Elf32_Ehdr);
		e.e_phentsize = sizeof(Elf32_Phdr);
		e.e_phnum = d->nsegs;
		memcpy(p, &e, sizeof(e));
	}
}

struct tbuf telf_build(const struct telf *d)
{
	size_t ehsize = d->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t phsize = d->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	struct tbuf b = { .is64 = d->is64 };
	size_t off = ehsize + d->nsegs * phsize;

	cr_assert(d->nsegs <= TELF_MAX_SEGS);
	for (unsigned int i = 0; i < d->nsegs; i++) {
		off = pad(off, 8);
		b.seg_offset[i] = off;
		off += d->seg[i].filesz;
	}
	b.size = off;
	b.bytes = calloc(1, b.size);
	cr_assert(b.bytes);

	write_ehdr(b.bytes, d);
	for (unsigned int i = 0; i < d->nsegs; i++) {
		const struct tseg *s = &d->seg[i];
		uint8_t *data = b.bytes + b.seg_offset[i];

		tbuf_set_ph(&b, i, PH_TYPE, s->type);
		tbuf_set_ph(&b, i, PH_FLAGS, s->flags);
		tbuf_set_ph(&b, i, PH_OFFSET, b.seg_offset[i]);
		tbuf_set_ph(&b, i, PH_PADDR, s->paddr);
		tbuf_set_ph(&b, i, PH_FILESZ, s->filesz);
		tbuf_set_ph(&b, i, PH_MEMSZ, s->memsz);
		tbuf_set_ph(&b, i, PH_ALIGN, s->align);
		if (s->data)
			memcpy(data, s->data, s->filesz);
		else
			for (uint64_t k = 0; k < s->filesz; k++)
				data[k] = telf_pattern(i, k);
	}
	return b;
}

struct tbuf tbuf_copy(const struct tbuf *b, size_t size)
{
	struct tbuf c = *b;

	c.size = size;
	c.bytes = malloc(size ? size : 1);
	cr_assert(c.bytes);
	memcpy(c.bytes, b->bytes, size);
	return c;
}

void tbuf_free(struct tbuf *b)
{
	free(b->bytes);
	b->bytes = NULL;
}

void tbuf_set_ph(struct tbuf *b, unsigned int i, enum ph_field f, uint64_t v)
{
	size_t ehsize = b->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t phsize = b->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	uint8_t *p = b->bytes + ehsize + i * phsize;

#define PH(field)                                             \
	(b->is64 ? put(p + offsetof(Elf64_Phdr, field),       \
		       sizeof(((Elf64_Phdr *)0)->field), v) : \
		   put(p + offsetof(Elf32_Phdr, field),       \
		       sizeof(((Elf32_Phdr *)0)->field), v))
	switch (f) {
	case PH_TYPE:
		PH(p_type);
		break;
	case PH_FLAGS:
		PH(p_flags);
		break;
	case PH_OFFSET:
		PH(p_offset);
		break;
	case PH_PADDR:
		PH(p_paddr);
		PH(p_vaddr);
		break;
	case PH_FILESZ:
		PH(p_filesz);
		break;
	case PH_MEMSZ:
		PH(p_memsz);
		break;
	case PH_ALIGN:
		PH(p_align);
		break;
	}
#undef PH
}

void tbuf_set_eh(struct tbuf *b, enum eh_field f, uint64_t v)
{
	uint8_t *p = b->bytes;

#define EH(field)                                             \
	(b->is64 ? put(p + offsetof(Elf64_Ehdr, field),       \
		       sizeof(((Elf64_Ehdr *)0)->field), v) : \
		   put(p + offsetof(Elf32_Ehdr, field),       \
		       sizeof(((Elf32_Ehdr *)0)->field), v))
	switch (f) {
	case EH_TYPE:
		EH(e_type);
		break;
	case EH_MACHINE:
		EH(e_machine);
		break;
	case EH_VERSION:
		EH(e_version);
		break;
	case EH_PHOFF:
		EH(e_phoff);
		break;
	case EH_PHENTSIZE:
		EH(e_phentsize);
		break;
	case EH_PHNUM:
		EH(e_phnum);
		break;
	}
#undef EH
}
