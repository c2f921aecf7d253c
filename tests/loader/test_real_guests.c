// SPDX-License-Identifier: MIT
/*
 * The loader against real linker output: every guest ELF built in guests/
 * (paths in LULL_GUEST_ELFS, colon-separated, set by meson) must load, with
 * its entry at the ELF's own e_entry (the guests' ENTRY is the PVH entry).
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "loader/guest_file.h"
#include "loader/pvh.h"
#include "lull_abi.h"

#define RAM_SIZE (64ull << 20)

static void check_guest(const char *path, uint8_t *ram)
{
	struct pvh_image img;
	char err[256] = "";
	Elf64_Ehdr eh;
	void *file;
	size_t size;

	cr_assert_eq(guest_file_read(path, &file, &size, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(
		pvh_load_elf(file, size, ram, RAM_SIZE, &img, err, sizeof(err)),
		0, "%s: %s", path, err);
	cr_assert_geq(size, sizeof(eh));
	memcpy(&eh, file, sizeof(eh));
	cr_expect_eq(img.entry, eh.e_entry, "%s: entry 0x%x, e_entry 0x%lx",
		     path, img.entry, (unsigned long)eh.e_entry);
	cr_expect_geq(img.load_start, LULL_BOOT_AREA_END);
	cr_expect_leq(img.load_end, RAM_SIZE);
	free(file);
}

Test(loader_guests, built_guests_load)
{
	const char *list = getenv("LULL_GUEST_ELFS");
	char *paths, *path, *save;
	unsigned int n = 0;

	if (!list || !*list)
		cr_skip_test(
			"LULL_GUEST_ELFS is not set (run through meson test)");
	paths = strdup(list);
	for (path = strtok_r(paths, ":", &save); path;
	     path = strtok_r(NULL, ":", &save)) {
		uint8_t *ram = calloc(1, RAM_SIZE);

		cr_assert(ram);
		check_guest(path, ram);
		free(ram);
		n++;
	}
	cr_log_info("%u guest ELFs loaded", n);
	free(paths);
}
