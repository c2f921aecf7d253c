// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the multiboot loader: the input is a kernel image.
 *
 * multiboot_detect() must agree with multiboot_load() (no header: -ENOEXEC
 * before anything else), then the image goes to multiboot_load() with
 * 4 MiB of zeroed guest RAM and, when that accepts it, the information is
 * written with a command line and a module picked by the file's last
 * byte. Besides "no crash, no UB, no leak" (ASan+UBSan), it checks the
 * contract in multiboot.h; a violation is __builtin_trap():
 *  - a rejected image returns -ENOEXEC or -ERANGE with a sentence in err,
 *    and has not touched a byte of RAM;
 *  - an accepted one reports load_start < load_end <= RAM size, an entry
 *    inside [load_start, load_end), and wrote no page outside that range;
 *  - the information lands at LULL_START_INFO_GPA with its flags, memory
 *    figures and NUL-terminated strings in the boot area, and writes
 *    nothing outside it.
 * Page residency tells what was written (fuzz.h), as in fuzz_pvh.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loader/multiboot.h"
#include "lull_abi.h"

#define RAM_SIZE (4ull << 20)
#define MODULE_GPA (3ull << 20)

static uint8_t *ram;
static char long_cmdline[LULL_CMDLINE_MAX + 1];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ram = fuzz_ram_map(RAM_SIZE);
	memset(long_cmdline, 'x', sizeof(long_cmdline) - 1);
	return 0;
}

static const char *pick_cmdline(unsigned pick)
{
	switch (pick % 4) {
	case 0:
		return NULL;
	case 1:
		return "x86/tsc.flat -v";
	case 2:
		return long_cmdline + 1; /* the longest allowed */
	default:
		return long_cmdline; /* one byte too long: -E2BIG */
	}
}

static bool in_boot_area(uint64_t gpa, uint64_t len)
{
	return gpa >= LULL_START_INFO_GPA && gpa <= LULL_BOOT_AREA_END &&
	       len <= LULL_BOOT_AREA_END - gpa;
}

static void check_string(uint32_t gpa, const char *want)
{
	size_t len = strlen(want);

	check(in_boot_area(gpa, len + 1));
	check(memcmp(ram + gpa, want, len + 1) == 0);
}

static void check_info(const char *cmdline, uint64_t module_size)
{
	struct multiboot_info mbi;

	memcpy(&mbi, ram + LULL_START_INFO_GPA, sizeof(mbi));
	check(mbi.flags & MULTIBOOT_INFO_MEMORY);
	check(mbi.mem_lower == 640);
	check(mbi.mem_upper == (RAM_SIZE >> 10) - 1024);
	check(mbi.flags & MULTIBOOT_INFO_MEM_MAP);
	check(mbi.mmap_length == 3 * sizeof(struct multiboot_mmap_entry));
	check(in_boot_area(mbi.mmap_addr, mbi.mmap_length));
	check_string(mbi.cmdline, cmdline ? cmdline : "");
	check_string(mbi.boot_loader_name, "lull");
	check(mbi.mods_count == (module_size ? 1 : 0));
	if (module_size) {
		struct multiboot_module mod;

		check(in_boot_area(mbi.mods_addr, sizeof(mod)));
		memcpy(&mod, ram + mbi.mods_addr, sizeof(mod));
		check(mod.mod_start == MODULE_GPA &&
		      mod.mod_end == MODULE_GPA + module_size);
		check_string(mod.string, "env");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct multiboot_image img = { 0 };
	unsigned pick = size ? data[size - 1] : 0;
	uint64_t module_size = pick & 0x10 ? 4096 : 0;
	char err[256] = "";
	const char *cmdline;
	bool found = multiboot_detect(data, size, NULL);
	int64_t info;
	int ret;

	ret = multiboot_load(data, size, ram, RAM_SIZE, &img, err,
			     sizeof(err));
	if (ret) {
		check(ret == -ENOEXEC || ret == -ERANGE);
		check(found || ret == -ENOEXEC);
		check(err[0] && memchr(err, 0, sizeof(err)));
		check(fuzz_ram_only_touched(0, 0, false));
		return 0;
	}
	check(found);
	check(img.load_start < img.load_end && img.load_end <= RAM_SIZE);
	check(img.entry >= img.load_start && img.entry < img.load_end);
	check(fuzz_ram_only_touched(img.load_start, img.load_end, false));

	cmdline = pick_cmdline(pick);
	info = multiboot_write_info(ram, RAM_SIZE, cmdline, MODULE_GPA,
				    module_size, "env", err, sizeof(err));
	if (cmdline && strlen(cmdline) >= LULL_CMDLINE_MAX) {
		check(info == -E2BIG);
	} else {
		check(info == LULL_START_INFO_GPA);
		check_info(cmdline, module_size);
	}
	check(fuzz_ram_only_touched(img.load_start, img.load_end, true));

	fuzz_ram_reset();
	return 0;
}
