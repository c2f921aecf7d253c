// SPDX-License-Identifier: MIT
/*
 * The command line: bad options end with status 64, bad guest files with
 * 65, each with a clear sentence on stderr; --help lists every option.
 * Everything here fails before lull opens /dev/kvm, so this suite runs on
 * any host (lull info, which opens it, passes with or without one); the
 * --vcpus limit that KVM itself reports is tested in test_cli_kvm.c.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "runner.h"

#define LIMIT_S 20.0

/* lull run ARGS... hello.elf must end with status 64 and say something. */
static void check_usage(const char *const args[], const char *const want[])
{
	char *argv[16];
	int n = 0;
	struct run r;

	for (; *args; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	run_lullv(&r, LIMIT_S, argv);

	cr_assert_not(r.killed);
	cr_assert_eq(r.status, 64, "status %d\nstderr:\n%s", r.status, r.err);
	assert_sentence(r.err, want);
	cr_assert_str_empty(r.out, "stdout:\n%s", r.out);
	run_free(&r);
}

Test(cli, mem_bad_suffix)
{
	check_usage(USAGE("run", "--mem", "16X", guest("hello")),
		    USAGE("--mem", "16X"));
}

/* strtoull skips blanks and takes a sign: neither may reach it. */
Test(cli, mem_blank_then_minus)
{
	check_usage(USAGE("run", "--mem", " -1048576", guest("hello")),
		    USAGE("--mem"));
}

Test(cli, slop_blank_then_minus)
{
	check_usage(USAGE("run", "--slop", " -5", guest("hello")),
		    USAGE("--slop"));
}

/* "i" and "iB" belong to a unit: "16i" and "16iB" are not sizes. */
Test(cli, mem_i_without_unit)
{
	check_usage(USAGE("run", "--mem", "16i", guest("hello")),
		    USAGE("--mem", "16i"));
	check_usage(USAGE("run", "--mem", "16iB", guest("hello")),
		    USAGE("--mem", "16iB"));
}

/* Before boot, not after the run: a path lull cannot write is usage. */
Test(cli, stats_path_unwritable_is_usage)
{
	check_usage(USAGE("run", "--stats", "/nonexistent/dir/stats.json",
			  guest("hello")),
		    USAGE("--stats", "/nonexistent/dir/stats.json"));
}

Test(cli, mem_zero)
{
	check_usage(USAGE("run", "--mem", "0", guest("hello")), USAGE("--mem"));
}

Test(cli, mem_not_a_number)
{
	check_usage(USAGE("run", "--mem", "lots", guest("hello")),
		    USAGE("--mem", "lots"));
}

Test(cli, mem_over_the_apic_page)
{
	check_usage(USAGE("run", "--mem", "4G", guest("hello")),
		    USAGE("--mem", "4G", "APIC"));
}

/* 4077M still ends below the local APIC page, but over the I/O APIC */
Test(cli, mem_over_the_ioapic)
{
	check_usage(USAGE("run", "--mem", "4077M", guest("hello")),
		    USAGE("--mem", "4077M", "I/O APIC", "4076M"));
}

Test(cli, apic_max_defer_not_a_number)
{
	check_usage(USAGE("run", "--apic-max-defer", "1ms", guest("hello")),
		    USAGE("--apic-max-defer", "1ms"));
}

Test(cli, apic_max_defer_with_strict)
{
	check_usage(USAGE("run", "--apic-max-defer", "1000000", "--timer-mode",
			  "strict", guest("hello")),
		    USAGE("--apic-max-defer", "strict"));
}

Test(cli, vcpus_zero)
{
	check_usage(USAGE("run", "--vcpus", "0", guest("hello")),
		    USAGE("--vcpus"));
}

Test(cli, vcpus_not_a_number)
{
	check_usage(USAGE("run", "--vcpus", "two", guest("hello")),
		    USAGE("--vcpus", "two"));
}

Test(cli, unknown_option)
{
	check_usage(USAGE("run", "--frobnicate", guest("hello")),
		    USAGE("option"));
}

Test(cli, unknown_command)
{
	check_usage(USAGE("start", guest("hello")), USAGE("start"));
}

Test(cli, no_guest)
{
	check_usage(USAGE("run", "--vcpus", "1"), USAGE("guest"));
}

Test(cli, no_command)
{
	struct run r;

	run_lull(&r, LIMIT_S, NULL);

	cr_assert_eq(r.status, 64, "status %d\nstderr:\n%s", r.status, r.err);
	assert_sentence(r.err, USAGE("command"));
	run_free(&r);
}

Test(cli, two_guests)
{
	check_usage(USAGE("run", guest("hello"), guest("spin")),
		    USAGE("spin.elf"));
}

Test(cli, timeout_negative)
{
	check_usage(USAGE("run", "--timeout", "-1", guest("hello")),
		    USAGE("--timeout"));
}

Test(cli, timeout_zero)
{
	check_usage(USAGE("run", "--timeout", "0", guest("hello")),
		    USAGE("--timeout"));
}

Test(cli, timeout_not_a_number)
{
	check_usage(USAGE("run", "--timeout", "soon", guest("hello")),
		    USAGE("--timeout"));
}

Test(cli, timer_mode_bogus)
{
	check_usage(USAGE("run", "--timer-mode", "bogus", guest("hello")),
		    USAGE("--timer-mode", "deferrable", "strict"));
}

Test(cli, missed_ticks_bogus)
{
	check_usage(USAGE("run", "--missed-ticks", "some", guest("hello")),
		    USAGE("--missed-ticks"));
}

Test(cli, slop_negative)
{
	check_usage(USAGE("run", "--slop", "-5", guest("hello")),
		    USAGE("--slop"));
}

Test(cli, timer_slots_out_of_range)
{
	check_usage(USAGE("run", "--timer-slots", "1", guest("hello")),
		    USAGE("--timer-slots"));
	check_usage(USAGE("run", "--timer-slots", "100000", guest("hello")),
		    USAGE("--timer-slots"));
}

Test(cli, option_missing_its_argument)
{
	check_usage(USAGE("run", "--mem"), USAGE("option"));
}

/* lull run FILE must end with status 65 and one sentence. */
static void check_bad_guest(const char *path)
{
	struct run r;

	run_lull(&r, LIMIT_S, "run", path, NULL);

	cr_assert_not(r.killed);
	cr_assert_eq(r.status, 65, "%s: status %d\nstderr:\n%s", path, r.status,
		     r.err);
	cr_assert_eq(count_lines(r.err), 1, "%s: want one sentence, got:\n%s",
		     path, r.err);
	assert_sentence(r.err, USAGE(""));
	cr_assert_str_empty(r.out, "stdout:\n%s", r.out);
	run_free(&r);
}

/* A scratch file holding len bytes of data (NULL: random bytes). */
static void make_file(char *path, const void *data, size_t len)
{
	int fd = mkstemp(path);
	unsigned char buf[4096];

	cr_assert_geq(fd, 0);
	if (!data) {
		srand((unsigned)getpid());
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)rand();
		buf[0] = 0x7e; /* never "\x7fELF" by chance */
		data = buf;
		len = len > sizeof(buf) ? sizeof(buf) : len;
	}
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

Test(cli, guest_missing)
{
	check_bad_guest("/nonexistent/lull/guest.elf");
}

Test(cli, guest_empty)
{
	char path[] = "/tmp/lull-empty-XXXXXX";

	make_file(path, "", 0);
	check_bad_guest(path);
	unlink(path);
}

/* A /proc file has content behind a size of 0: not "empty". */
Test(cli, guest_under_proc)
{
	struct run r;

	run_lull(&r, LIMIT_S, "run", "/proc/self/status", NULL);
	cr_assert_eq(r.status, 65, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.err, "/proc"), "stderr:\n%s", r.err);
	cr_assert_null(strstr(r.err, "empty"), "stderr:\n%s", r.err);
	run_free(&r);
}

Test(cli, guest_is_a_directory)
{
	check_bad_guest("/tmp");
}

Test(cli, guest_random_bytes)
{
	char path[] = "/tmp/lull-random-XXXXXX";

	make_file(path, NULL, 4096);
	check_bad_guest(path);
	unlink(path);
}

Test(cli, guest_truncated_elf_header)
{
	char path[] = "/tmp/lull-trunc-XXXXXX";

	make_file(path,
		  "\x7f"
		  "ELF\x02\x01\x01",
		  7);
	check_bad_guest(path);
	unlink(path);
}

/* A real x86-64 ELF without the PVH note: /bin/true (usually ET_DYN). */
Test(cli, guest_not_pvh)
{
	if (access("/bin/true", R_OK))
		cr_skip_test("needs /bin/true as a non-PVH ELF");
	check_bad_guest("/bin/true");
}

/* An ET_EXEC x86-64 ELF that lacks the PVH note: a guest's header with
 * its note type changed is the loader suite's job; here: /bin/true's
 * header patched to ET_EXEC, so only the missing note can reject it. */
Test(cli, guest_elf_exec_without_pvh_note)
{
	char path[] = "/tmp/lull-nopvh-XXXXXX";
	size_t len;
	char *elf = read_file("/bin/true", &len);

	if (!elf || len < 64)
		cr_skip_test("needs /bin/true as a non-PVH ELF");
	elf[16] = 2; /* e_type = ET_EXEC */
	make_file(path, elf, len);
	free(elf);
	check_bad_guest(path);
	unlink(path);
}

/* lull run ARGS... must end with status 65, one line, mentioning want. */
static void check_bad_input(const char *const args[], const char *const want[])
{
	char *argv[16];
	int n = 0;
	struct run r;

	for (; *args; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	run_lullv(&r, LIMIT_S, argv);

	cr_assert_not(r.killed);
	cr_assert_eq(r.status, 65, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_eq(count_lines(r.err), 1, "want one sentence, got:\n%s",
		     r.err);
	assert_sentence(r.err, want);
	cr_assert_str_empty(r.out, "stdout:\n%s", r.out);
	run_free(&r);
}

/* Neither ELF, multiboot nor bzImage: the sentence names every format. */
Test(cli, kernel_garbage_names_every_format)
{
	char path[] = "/tmp/lull-garbage-XXXXXX";

	make_file(path, NULL, 4096);
	check_bad_input(
		USAGE("run", path),
		USAGE("not a PVH ELF, a multiboot kernel or a bzImage"));
	unlink(path);
}

/* A multiboot header that asks for a display: refused, as the spec asks. */
Test(cli, kernel_multiboot_video_mode)
{
	char path[] = "/tmp/lull-mbvideo-XXXXXX";
	uint32_t h[8] = { 0x1BADB002u, 1u << 2, 0 };

	h[2] = -(h[0] + h[1]);
	make_file(path, h, sizeof(h));
	check_bad_input(USAGE("run", path),
			USAGE("requires a video mode (flag 2)"));
	unlink(path);
}

/* A bzImage's magic over a file that ends inside its setup header. */
Test(cli, kernel_truncated_bzimage)
{
	char path[] = "/tmp/lull-bztrunc-XXXXXX";
	unsigned char b[0x240] = { 0 };

	b[0x1fe] = 0x55;
	b[0x1ff] = 0xaa;
	b[0x201] = 0x6a; /* the header runs to 0x26c */
	memcpy(b + 0x202, "HdrS", 4);
	b[0x206] = 0x0f;
	b[0x207] = 0x02;
	make_file(path, b, sizeof(b));
	check_bad_input(USAGE("run", path),
			USAGE("truncated bzImage", "0x26c"));
	unlink(path);
}

Test(cli, initrd_missing)
{
	require_guest("hello");
	check_bad_input(USAGE("run", "--initrd",
			      "/nonexistent/lull/initrd.cpio", guest("hello")),
			USAGE("--initrd", "/nonexistent/lull/initrd.cpio",
			      "no such file"));
}

/* An initrd bigger than guest RAM: refused before KVM is asked for anything. */
Test(cli, initrd_too_big)
{
	char path[] = "/tmp/lull-bigrd-XXXXXX";
	int fd;

	require_guest("hello");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	check_bad_input(
		USAGE("run", "--mem", "4M", "--initrd", path, guest("hello")),
		USAGE("--initrd", "does not fit", "--mem"));
	unlink(path);
}

static const char *const run_options[] = {
	"--vcpus",	"--mem",	  "--cmdline", "--initrd",
	"--timer-mode", "--missed-ticks", "--slop",    "--timer-slots",
	"--timeout",	"--console",	  "--stats",   "--no-x2apic",
	"--no-pv-eoi",	"--test-device",  NULL,
};

Test(cli, help_lists_every_option)
{
	struct run r;

	run_lull(&r, LIMIT_S, "--help", NULL);

	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	for (const char *const *o = run_options; *o; o++)
		cr_assert(strstr(r.out, *o), "--help does not list %s:\n%s", *o,
			  r.out);
	cr_assert(strstr(r.out, "lull run"), "--help has no usage line:\n%s",
		  r.out);
	run_free(&r);
}

Test(cli, run_help_exits_0)
{
	struct run r;

	run_lull(&r, LIMIT_S, "run", "--help", NULL);

	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.out, "--timer-mode"), "stdout:\n%s", r.out);
	run_free(&r);
}

/*
 * Every long option in main.c's option table appears in --help: reads
 * the table's { "name", entries from the source (LULL_SOURCE_ROOT).
 */
Test(cli, help_lists_every_option_in_the_source_table)
{
	const char *root = getenv("LULL_SOURCE_ROOT");
	char path[512], opt[64];
	const char *p, *end;
	char *src;
	struct run r;
	int n = 0;

	snprintf(path, sizeof(path), "%s/vmm/main.c", root ? root : ".");
	src = read_file(path, NULL);
	if (!src)
		cr_skip_test(
			"needs the source (LULL_SOURCE_ROOT): cannot read %s",
			path);
	p = strstr(src, "struct option long_options[]");
	cr_assert_not_null(p, "no long_options table in %s", path);
	end = strstr(p, "};");
	cr_assert_not_null(end);
	run_lull(&r, LIMIT_S, "--help", NULL);

	cr_assert_eq(r.status, 0);
	while ((p = strstr(p, "{ \"")) && p < end) {
		const char *q = p + 3, *close = strchr(q, '"');

		snprintf(opt, sizeof(opt), "--%.*s", (int)(close - q), q);
		cr_assert(strstr(r.out, opt), "--help does not list %s:\n%s",
			  opt, r.out);
		n++;
		p = close;
	}
	cr_assert_geq(n, 10, "found only %d options in %s", n, path);
	free(src);
	run_free(&r);
}

Test(cli, info_takes_no_arguments)
{
	check_usage(USAGE("info", "--verbose"), USAGE("info", "--verbose"));
}

/*
 * lull info on any host: the KVM it finds, or where /dev/kvm cannot be
 * opened, status 69 with the sentence lull run gives for it.
 */
Test(cli, info_names_the_kvm_or_why_not)
{
	const char *why = kvm_unavailable();
	struct run r;

	run_lull(&r, LIMIT_S, "info", NULL);
	if (why) {
		cr_assert_eq(r.status, 69, "status %d (%s)\nstderr:\n%s",
			     r.status, why, r.err);
		assert_sentence(r.err, USAGE("/dev/kvm"));
		cr_assert_str_empty(r.out, "stdout:\n%s", r.out);
	} else {
		cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status,
			     r.err);
		cr_assert(strstr(r.out, "kvm: ") &&
				  strstr(r.out, "hardware virtualization: ") &&
				  strstr(r.out, "feature user_space_msr: "),
			  "stdout:\n%s", r.out);
	}
	run_free(&r);
}

Test(cli, version_exits_0)
{
	struct run r;

	run_lull(&r, LIMIT_S, "--version", NULL);

	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "lull "), "stdout:\n%s", r.out);
	run_free(&r);
}

Test(cli, console_path_unwritable)
{
	struct run r;

	run_lull(&r, LIMIT_S, "run", "--console", "/nonexistent/dir/console",
		 guest("hello"), NULL);

	cr_assert_neq(r.status, 0, "stderr:\n%s", r.err);
	cr_assert(strstr(r.err, "/nonexistent/dir/console") ||
			  contains_ci(r.err, "console"),
		  "stderr:\n%s", r.err);
	cr_assert_eq(count_lines(r.err), 1, "want one sentence:\n%s", r.err);
	run_free(&r);
}

/* --console or --stats naming the guest image must not truncate it. */
static void check_output_is_the_image(const char *option)
{
	char path[] = "/tmp/lull-guest-XXXXXX";
	size_t before, after;
	char *copy = read_file(guest("hello"), &before);
	int fd = mkstemp(path);
	struct run r;

	cr_assert_not_null(copy);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, copy, before), (ssize_t)before);
	close(fd);
	run_lull(&r, LIMIT_S, "run", option, path, path, NULL);
	cr_assert_eq(r.status, 64, "%s: status %d\nstderr:\n%s", option,
		     r.status, r.err);
	assert_sentence(r.err, USAGE(option, "guest image"));
	free(read_file(path, &after));
	cr_assert_eq(after, before, "%s truncated the image", option);
	unlink(path);
	free(copy);
	run_free(&r);
}

Test(cli, console_is_the_guest_image)
{
	check_output_is_the_image("--console");
}

Test(cli, stats_is_the_guest_image)
{
	check_output_is_the_image("--stats");
}

/* A FIFO nobody reads: a clear error at once, not a hang in open(). */
Test(cli, console_fifo_without_reader)
{
	char dir[] = "/tmp/lull-fifo-XXXXXX", fifo[64];
	struct run r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/console", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	run_lull(&r, LIMIT_S, "run", "--timeout", "1", "--console", fifo,
		 guest("hello"), NULL);
	cr_assert_not(r.killed, "lull hung opening the FIFO");
	cr_assert_eq(r.status, 64, "status %d\nstderr:\n%s", r.status, r.err);
	assert_sentence(r.err, USAGE("FIFO"));
	unlink(fifo);
	rmdir(dir);
	run_free(&r);
}
