/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer harnesses share: their one assertion, the reader of
 * an input's bytes, and guest RAM for the loader fuzzers.
 *
 * check() traps, so that a broken contract is a crash libFuzzer keeps, like
 * an ASan report. fuzz_ram_map() maps RAM once, anonymous and without
 * transparent huge pages, so a page is resident (mincore) exactly when
 * something wrote it since fuzz_ram_reset() dropped it: a harness learns
 * what a loader wrote without scanning RAM for every input.
 */
#ifndef LULL_FUZZ_H
#define LULL_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define check(cond)                       \
	do {                              \
		if (!(cond))              \
			__builtin_trap(); \
	} while (0)

/* An input being decoded, a few little-endian bytes at a time. */
struct fuzz_input {
	const uint8_t *p;
	size_t left;
};

/* Reads run past the end as zeros: every input decodes to something. */
static inline uint64_t fuzz_take(struct fuzz_input *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->left; i++, in->left--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

/* Maps size bytes of zeroed RAM (a multiple of 4 KiB); once per process. */
uint8_t *fuzz_ram_map(uint64_t size);
/* Were only pages of [lo, hi) (and, if boot, of the boot area) written? */
bool fuzz_ram_only_touched(uint64_t lo, uint64_t hi, bool boot);
/* Drops every page: RAM reads as zeroes again, and nothing is resident. */
void fuzz_ram_reset(void);

#endif
