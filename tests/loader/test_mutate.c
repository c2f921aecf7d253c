// SPDX-License-Identifier: MIT
/*
 * Randomized mutation of good ELF32/ELF64 images: whatever the bytes, the
 * loader never crashes, never reads past the file (each image sits in an
 * exact-size buffer, run under ASan) and never writes outside guest RAM
 * (guard zones around RAM, checked after every accepted load).
 * LULL_TEST_SEED=<n> replays a run; the seed is printed either way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "elf_builder.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#define ITERATIONS 100000
#define FUZZ_RAM_SIZE 0x300000ull /* the good image ends at 0x203000 */
#define GUARD 4096
#define GUARD_BYTE 0x5c

static uint64_t rng_state;

/* xorshift64*: small, seedable, good enough to pick bytes. */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint64_t pick_seed(void)
{
	const char *env = getenv("LULL_TEST_SEED");

	if (env && *env)
		return strtoull(env, NULL, 0);
	return (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

/* Values that sit on the edges the loader checks. */
static uint64_t interesting_value(void)
{
	static const uint64_t v[] = {
		0,
		1,
		4,
		0x1000,
		0x2fff,
		0x3000,
		FUZZ_RAM_SIZE - 1,
		FUZZ_RAM_SIZE,
		0x7fffffff,
		0xffffffff,
		0x100000000ull,
		UINT64_MAX,
		UINT64_MAX - 0xfff,
	};

	return v[rng() % (sizeof(v) / sizeof(v[0]))];
}

static void mutate(uint8_t *p, size_t size)
{
	unsigned int edits = 1 + rng() % 4;

	for (unsigned int i = 0; i < edits; i++) {
		if (rng() % 4 == 0) {
			/* A whole little-endian word, 4- or 8-aligned, into the headers mostly. */
			size_t width = rng() % 2 ? 8 : 4;
			size_t span = size < 256 ? size : 256;
			size_t at = rng() % span / width * width;
			uint64_t v = interesting_value();

			if (at + width <= size)
				memcpy(p + at, &v, width);
		} else {
			p[rng() % size] ^= 1u << (rng() % 8);
		}
	}
}

static bool all_equal(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

Test(loader_mutate, random_mutations_never_escape)
{
	uint64_t seed = pick_seed();
	struct telf d64 = telf_good(true), d32 = telf_good(false);
	struct tbuf good[2] = { telf_build(&d32), telf_build(&d64) };
	uint8_t *area = malloc(GUARD + FUZZ_RAM_SIZE + GUARD);
	uint8_t *ram = area + GUARD;
	unsigned long accepted = 0, rejected = 0;

	fprintf(stderr,
		"loader_mutate: seed %" PRIu64 " (LULL_TEST_SEED to replay)\n",
		seed);
	rng_state = seed ? seed : 1;
	cr_assert(area);
	memset(area, GUARD_BYTE, GUARD);
	memset(ram, 0, FUZZ_RAM_SIZE);
	memset(ram + FUZZ_RAM_SIZE, GUARD_BYTE, GUARD);

	for (unsigned long i = 0; i < ITERATIONS; i++) {
		const struct tbuf *g = &good[i & 1];
		struct tbuf b = tbuf_copy(g, g->size);
		struct pvh_image img;
		char err[256] = "";
		int ret;

		mutate(b.bytes, b.size);
		if (rng() % 16 == 0)
			b.size =
				rng() % b.size; /* and sometimes cut it short */
		ret = pvh_load_elf(b.bytes, b.size, ram, FUZZ_RAM_SIZE, &img,
				   err, sizeof(err));
		tbuf_free(&b);

		if (ret) {
			cr_assert(ret == -ENOEXEC || ret == -ERANGE,
				  "seed %" PRIu64 " iteration %lu: ret %d",
				  seed, i, ret);
			cr_assert(err[0],
				  "seed %" PRIu64 " iteration %lu: no message",
				  seed, i);
			rejected++;
			continue;
		}
		accepted++;
		cr_assert(img.load_start < img.load_end &&
				  img.load_end <= FUZZ_RAM_SIZE,
			  "seed %" PRIu64 " iteration %lu: accepted [0x%" PRIx64
			  ", 0x%" PRIx64 ")",
			  seed, i, img.load_start, img.load_end);
		cr_assert(img.entry >= img.load_start &&
				  img.entry < img.load_end,
			  "seed %" PRIu64 " iteration %lu: entry 0x%x", seed, i,
			  img.entry);
		cr_assert(all_equal(ram + LULL_START_INFO_GPA,
				    LULL_BOOT_AREA_END - LULL_START_INFO_GPA,
				    0),
			  "seed %" PRIu64 " iteration %lu: boot area written",
			  seed, i);
		cr_assert(all_equal(area, GUARD, GUARD_BYTE) &&
				  all_equal(ram + FUZZ_RAM_SIZE, GUARD,
					    GUARD_BYTE),
			  "seed %" PRIu64
			  " iteration %lu: wrote outside guest RAM",
			  seed, i);
	}
	fprintf(stderr, "loader_mutate: %lu accepted, %lu rejected\n", accepted,
		rejected);
	cr_expect_gt(accepted, 0);
	cr_expect_gt(rejected, 0);
	tbuf_free(&good[0]);
	tbuf_free(&good[1]);
	free(area);
}
