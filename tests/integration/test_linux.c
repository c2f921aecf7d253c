// SPDX-License-Identifier: MIT
/*
 * An unmodified Linux under lull: Debian's stock kernel, the one
 * tests/nested/lull-nested boots and caches, with its ELF vmlinux taken
 * out of the bzImage by scripts/linux-vmlinux. Two vCPUs, no initrd, no
 * disk: it boots to its root mount and panics there, and on the way it
 * must take its TSC rate from kvmclock, find both local APICs in lull's
 * MADT, start the second vCPU with INIT/SIPI and tick on the APIC timer.
 *
 * Booted with panic=-1, Linux reboots at once when it has panicked: it
 * writes the FADT's reset register or jumps to the reset vector, and lull
 * ends with its reset status, 32. --timeout only bounds a Linux that never
 * gets that far (status 124, and the console shows where it stopped).
 *
 * Then the whole way: the bzImage itself with --initrd and the initramfs
 * of tests/linux (lull-init, init=check), on 1 and 2 vCPUs in both timer
 * modes. lull-init prints "lull-init: start", checks the clock over a 1 s
 * nanosleep, one pinned thread per CPU and nproc, prints its verdict and
 * powers off; lull must end with status 0.
 *
 * Skips where no kernel is cached (a host where lull-nested has never run;
 * inside the runner it always is) or python3 is missing.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "runner.h"

/*
 * Linux's own boot under lull: 20-40 s in the nested runner on its own,
 * more beside the suite's other tests; the limits only catch a hang.
 */
#define BOOT_LIMIT_S 110.0
#define LULL_TIMEOUT "100"
/*
 * Boot to init, its checks (a second and a little) and poweroff: the boot
 * above plus the initramfs; again the limits only catch a hang.
 */
#define INIT_LIMIT_S 170.0
#define INIT_LULL_TIMEOUT "160"
/* Extraction: about 8 s in the nested runner, 3 s on hardware. */
#define EXTRACT_LIMIT_S 60.0

/* scripts/linux-vmlinux's default: $LULL_NESTED_CACHE or the XDG cache. */
static void cache_dir(char *out, size_t len)
{
	const char *cache = getenv("LULL_NESTED_CACHE");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (cache && *cache)
		snprintf(out, len, "%s", cache);
	else if (xdg && *xdg)
		snprintf(out, len, "%s/lull-nested", xdg);
	else
		snprintf(out, len, "%s/.cache/lull-nested", home ? home : "");
}

/* The cached bzImage, as the script would pick it; false if none. */
static bool cached_bzimage(char *out, size_t len, char *cache, size_t clen)
{
	char pattern[600];
	glob_t g;
	bool found;

	cache_dir(cache, clen);
	snprintf(pattern, sizeof(pattern), "%s/current/boot/vmlinuz-*", cache);
	found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	if (found) /* sorted: the last is the newest, as in the script */
		snprintf(out, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return found;
}

/* bzImage -> ELF vmlinux at out, through scripts/linux-vmlinux. */
static void extract_vmlinux(const char *python, const char *bzimage,
			    const char *out)
{
	const char *root = getenv("LULL_SOURCE_ROOT");
	char script[512];
	struct proc p;
	struct run r;

	cr_assert(root && *root, "LULL_SOURCE_ROOT is not set");
	snprintf(script, sizeof(script), "%s/scripts/linux-vmlinux", root);
	cr_assert_eq(proc_spawn(&p, (char *const[]){ (char *)python, script,
						     "-o", (char *)out,
						     (char *)bzimage, NULL }),
		     0);
	proc_wait(&p, EXTRACT_LIMIT_S, &r);
	if (r.status)
		unlink(out);
	cr_assert_not(r.killed, "linux-vmlinux ran over %.0f s",
		      EXTRACT_LIMIT_S);
	cr_assert_eq(r.status, 0, "linux-vmlinux %s: status %d\n%s%s", bzimage,
		     r.status, r.out, r.err);
	run_free(&r);
}

/*
 * Debian's kernel needs a KVM that runs it: KVM's instruction emulator,
 * which is all kvm_pvm has for a guest not built for PVM, stops on its
 * CMPXCHG16B (SLUB) and, without that, on its alternatives' INT3
 * self-test, under lull and QEMU alike.
 */
static void require_a_kvm_for_linux(void)
{
	require_hardware_kvm("stops at Debian's kernel's CMPXCHG16B and INT3");
}

/* Appends each of lines missing from console to missing. */
static void find_lines(const char *console, const char *const lines[],
		       char *missing, size_t len)
{
	for (const char *const *l = lines; *l; l++)
		if (!strstr(console, *l))
			snprintf(missing + strlen(missing),
				 len - strlen(missing), "  \"%s\"\n", *l);
}

static void expect_vcpu_stat(const char *json, unsigned vcpu, const char *key)
{
	char path[64];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "vcpus[%u].%s", vcpu, key);
	cr_expect(stats_u64(json, path, &v) && v > 0, "%s is %llu", path,
		  (unsigned long long)v);
}

/* What Linux 6.1 logs when lull's pieces work. */
static const char *const want[] = {
	/* kvmclock, KVM's, found through lull's CPUID at 0x40000100 */
	"Hypervisor detected: KVM",
	"kvm-clock: Using msrs",
	"tsc: Detected",
	/* the MADT */
	"ACPI: Using ACPI (MADT) for SMP configuration information",
	"smpboot: Allowing 2 CPUs",
	/* the APIC in x2APIC mode, its TSC-deadline timer, INIT/SIPI */
	"Switched APIC routing to physical x2apic",
	"TSC deadline timer available",
	"smp: Brought up 1 node, 2 CPUs",
	NULL,
};

Test(stock_linux, boots_on_two_vcpus_with_the_apic_timer, .timeout = 240)
{
	char missing[1024] = "";
	char bzimage[700], cache[512], python[512];
	char vmlinux[] = "/tmp/lull-vmlinux-XXXXXX";
	char stats_path[] = "/tmp/lull-linux-stats-XXXXXX";
	const char *panic;
	char *json;
	struct proc p;
	struct run r;
	int fd;

	require_a_kvm_for_linux();
	if (!cached_bzimage(bzimage, sizeof(bzimage), cache, sizeof(cache)))
		cr_skip_test(
			"no Debian kernel cached in %s/current/boot (tests/nested/lull-nested fetches one on its first run)",
			cache);
	if (!in_path("python3", python, sizeof(python)))
		cr_skip_test("needs python3 to run scripts/linux-vmlinux");
	fd = mkstemp(vmlinux);
	cr_assert_geq(fd, 0);
	close(fd);
	fd = mkstemp(stats_path);
	cr_assert_geq(fd, 0);
	close(fd);
	extract_vmlinux(python, bzimage, vmlinux);

	cr_assert_eq(spawn_lull(&p, "run", "--mem", "256M", "--vcpus", "2",
				"--timeout", LULL_TIMEOUT, "--stats",
				stats_path, "--cmdline",
				"console=ttyS0 panic=-1", vmlinux, NULL),
		     0);
	proc_wait(&p, BOOT_LIMIT_S, &r);
	unlink(vmlinux);
	json = read_file(stats_path, NULL);
	unlink(stats_path);

	cr_assert_eq(r.status, REBOOT_STATUS,
		     "status %d\nconsole:\n%s\nstderr:\n%s", r.status, r.out,
		     r.err);
	panic = strstr(r.out, "Kernel panic - not syncing");
	cr_assert(panic && strstr(panic, "VFS: Unable to mount root fs"),
		  "Linux panicked before its root mount:\n%s", r.out);

	find_lines(r.out, want, missing, sizeof(missing));
	cr_expect_str_empty(missing,
			    "missing from the console:\n%s\nconsole:\n%s",
			    missing, r.out);
	cr_expect_not(strstr(r.out, "ACPI MADT or MP tables are not detected"),
		      "Linux found no MADT:\n%s", r.out);

	cr_assert(json, "no --stats file");
	for (unsigned i = 0; i < 2; i++) {
		expect_vcpu_stat(json, i, "apic_timer_fired");
		expect_vcpu_stat(json, i, "injections");
		/* Linux takes PV EOI where CPUID offers it, on every CPU */
		expect_vcpu_stat(json, i, "apic_pv_eois");
	}
	free(json);
	run_free(&r);
}

/* The initramfs tests/linux/meson.build builds (LULL_INITRAMFS). */
static const char *initramfs(void)
{
	const char *path = getenv("LULL_INITRAMFS");

	cr_assert(path && *path,
		  "LULL_INITRAMFS is not set: run the suite with 'meson test'");
	cr_assert_eq(access(path, R_OK), 0, "cannot read the initramfs %s",
		     path);
	return path;
}

/*
 * The stock bzImage + initramfs, lull-init in check mode on vcpus vCPUs in
 * timer_mode: lull ends with status 0 (the guest's ACPI poweroff) and the
 * console shows init's start and PASS lines, no FAIL. Linux's tick is the
 * TSC-deadline timer, and each deadline wakes a halted vCPU's host once:
 * one found not yet reached when its timer ran on a halted vCPU (where
 * KVM holds the TSC: apic_timer_rearmed_halted) costs a second wakeup,
 * and may be at most one in 20. (On a running vCPU, whose held TSC loses
 * the time of each exit, it costs an exit: counted, not judged.) Linux
 * takes PV EOI where CPUID offers it; with pv_eoi false (--no-pv-eoi) it
 * must write every EOI, and still pass.
 */
static void boot_to_init_and_power_off(unsigned vcpus, const char *timer_mode,
				       bool pv_eoi)
{
	char bzimage[700], cache[512], cmdline[160], vcpus_arg[16];
	char stats_path[] = "/tmp/lull-linux-stats-XXXXXX";
	const char *verdict;
	char *json;
	struct run r;
	int fd;

	require_a_kvm_for_linux();
	if (!cached_bzimage(bzimage, sizeof(bzimage), cache, sizeof(cache)))
		cr_skip_test(
			"no Debian kernel cached in %s/current/boot (tests/nested/lull-nested fetches one on its first run)",
			cache);
	snprintf(vcpus_arg, sizeof(vcpus_arg), "%u", vcpus);
	snprintf(cmdline, sizeof(cmdline),
		 "console=ttyS0 lull_init=check lull_expect_cpus=%u", vcpus);

	fd = mkstemp(stats_path);
	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	close(fd);
	/* no --mem: a bzImage's default must be enough for a user */
	char *args[16] = { "run",
			   "--vcpus",
			   vcpus_arg,
			   "--timer-mode",
			   (char *)timer_mode,
			   "--timeout",
			   INIT_LULL_TIMEOUT,
			   "--stats",
			   stats_path,
			   "--initrd",
			   (char *)initramfs(),
			   "--cmdline",
			   cmdline };
	unsigned n = 0;

	while (args[n])
		n++;
	if (!pv_eoi)
		args[n++] = "--no-pv-eoi";
	args[n++] = bzimage;
	args[n] = NULL;
	run_lullv(&r, INIT_LIMIT_S, args);
	json = read_file(stats_path, NULL);
	unlink(stats_path);

	cr_assert_not(r.killed,
		      "lull ran over %.0f s\nconsole:\n%s\nstderr:\n%s",
		      INIT_LIMIT_S, r.out, r.err);
	cr_assert(strstr(r.out, "lull-init: start"),
		  "init never started (status %d)\nconsole:\n%s\nstderr:\n%s",
		  r.status, r.out, r.err);
	verdict = strstr(r.out, "lull-init: FAIL");
	cr_assert_null(verdict, "%.*s\nconsole:\n%s",
		       verdict ? (int)strcspn(verdict, "\n") : 0,
		       verdict ? verdict : "", r.out);
	cr_assert(
		strstr(r.out, "lull-init: PASS"),
		"init printed no verdict (status %d)\nconsole:\n%s\nstderr:\n%s",
		r.status, r.out, r.err);
	cr_assert_eq(
		r.status, 0,
		"the guest powered off but lull's status is %d\nstderr:\n%s",
		r.status, r.err);
	cr_assert(json, "no --stats file");
	for (unsigned i = 0; i < vcpus; i++) {
		uint64_t fired = vcpu_stat(json, i, "apic_timer_fired");
		uint64_t rearmed = vcpu_stat(json, i, "apic_timer_rearmed");
		uint64_t halted =
			vcpu_stat(json, i, "apic_timer_rearmed_halted");
		uint64_t pv_eois = vcpu_stat(json, i, "apic_pv_eois");

		cr_log_info(
			"vCPU %u: %lu APIC timer expiries, %lu TSC deadlines re-armed, %lu of them halted",
			i, fired, rearmed, halted);
		cr_expect_leq(
			halted * 20, fired,
			"vCPU %u: %lu of %lu TSC deadlines not reached when their timer ran on the halted vCPU",
			i, halted, fired);
		if (pv_eoi)
			cr_expect_gt(pv_eois, 0,
				     "vCPU %u: no EOI through PV EOI", i);
		else
			cr_expect_eq(pv_eois, 0,
				     "vCPU %u: %lu EOIs through PV EOI, hidden",
				     i, pv_eois);
	}
	free(json);
	run_free(&r);
}

Test(stock_linux, init_on_one_vcpu_deferrable, .timeout = 300)
{
	boot_to_init_and_power_off(1, "deferrable", true);
}

Test(stock_linux, init_on_one_vcpu_strict, .timeout = 300)
{
	boot_to_init_and_power_off(1, "strict", true);
}

Test(stock_linux, init_on_two_vcpus_deferrable, .timeout = 300)
{
	boot_to_init_and_power_off(2, "deferrable", true);
}

/* ...and with every EOI written, as a guest on a VMM without PV EOI */
Test(stock_linux, init_on_two_vcpus_strict, .timeout = 300)
{
	boot_to_init_and_power_off(2, "strict", false);
}
