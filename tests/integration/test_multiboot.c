// SPDX-License-Identifier: MIT
/*
 * Multiboot on KVM: a kernel of 68 bytes, written here, checks what the
 * specification promises at its entry and answers through the debug-exit
 * port. It loads by its header's address fields (flag 16) at 1 MiB and
 * checks eax = 0x2BADB002, that the command line in the information ebx
 * names starts with the kernel's path ('/'), and that there is one
 * module; then it exits with the module's first byte, or 0xee if any
 * check failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "runner.h"

#define QUICK_S 20.0
#define LOAD 0x100000u
#define CHECKS_FAILED 0xee

/*
 *	cmp  $0x2BADB002, %eax     ; the boot magic
 *	jne  fail
 *	mov  16(%ebx), %edx        ; cmdline
 *	cmpb $'/', (%edx)
 *	jne  fail
 *	cmpl $1, 20(%ebx)          ; mods_count
 *	jne  fail
 *	mov  24(%ebx), %eax        ; mods_addr
 *	mov  (%eax), %eax          ; mod_start
 *	mov  (%eax), %al           ; its first byte
 *	out  %al, $0xf4
 *	hlt
 * fail:
 *	mov  $0xee, %al
 *	out  %al, $0xf4
 *	hlt
 */
static const uint8_t code[] = {
	0x3d, 0x02, 0xb0, 0xad, 0x2b, 0x75, 0x18, 0x8b, 0x53, 0x10, 0x80, 0x3a,
	0x2f, 0x75, 0x10, 0x83, 0x7b, 0x14, 0x01, 0x75, 0x0a, 0x8b, 0x43, 0x18,
	0x8b, 0x00, 0x8a, 0x00, 0xe6, 0xf4, 0xf4, 0xb0, 0xee, 0xe6, 0xf4, 0xf4,
};

/* The header at offset 0, loaded at LOAD; the code right after it. */
static void write_kernel(char *path)
{
	uint32_t h[8] = {
		0x1BADB002u, 1u << 16, 0,
		LOAD, /* header_addr */
		LOAD, /* load_addr: the file from its first byte */
		0, /* load_end_addr: the whole file */
		0, /* bss_end_addr: none */
		LOAD + sizeof(h), /* entry_addr */
	};
	int fd = mkstemp(path);

	h[2] = -(h[0] + h[1]);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, h, sizeof(h)), (ssize_t)sizeof(h));
	cr_assert_eq(write(fd, code, sizeof(code)), (ssize_t)sizeof(code));
	close(fd);
}

Test(multiboot, kernel_sees_magic_cmdline_and_module)
{
	char kernel[] = "/tmp/lull-mb-kernel-XXXXXX";
	char module[] = "/tmp/lull-mb-module-XXXXXX";
	int fd;
	struct run r;

	write_kernel(kernel);
	fd = mkstemp(module);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "*module", 7), 7);
	close(fd);

	run_lull(&r, QUICK_S, "run", "--initrd", module, "--cmdline", "a b",
		 kernel, NULL);
	cr_assert_eq(r.status, '*',
		     "status %d (0xee: a check failed)\nstderr:\n%s", r.status,
		     r.err);
	run_free(&r);
	unlink(kernel);
	unlink(module);
}

/* Without --initrd the kernel finds mods_count 0, and says so. */
Test(multiboot, no_initrd_is_no_module)
{
	char kernel[] = "/tmp/lull-mb-kernel-XXXXXX";
	struct run r;

	write_kernel(kernel);
	run_lull(&r, QUICK_S, "run", kernel, NULL);
	cr_assert_eq(r.status, CHECKS_FAILED, "status %d\nstderr:\n%s",
		     r.status, r.err);
	run_free(&r);
	unlink(kernel);
}
