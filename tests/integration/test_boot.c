// SPDX-License-Identifier: MIT
/*
 * Boot: real guests under the real lull binary. Each test arranges a
 * command line, runs lull as a child process and asserts on its exit
 * status, its stdout/stderr and (where it says so) its --stats JSON.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "runner.h"

/* Safety limit for runs that should end on their own within a second. */
#define QUICK_S 20.0

Test(boot, hello_prints_and_exits_0)
{
	struct run r;

	run_lull(&r, QUICK_S, "run", guest("hello"), NULL);

	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	cr_assert(strstr(r.out, "hello: lull guest up (vcpu 0 of 1, hv lull"),
		  "stdout:\n%s", r.out);
	cr_assert(strstr(r.out, "hello: PASS hv=lull vcpus=1\n"), "stdout:\n%s",
		  r.out);
	cr_assert_str_empty(r.err, "stderr:\n%s", r.err);
	run_free(&r);
}

Test(boot, hello_sees_its_cmdline)
{
	struct run r;

	run_lull(&r, QUICK_S, "run", "--cmdline", "alpha=1 beta",
		 guest("hello"), NULL);

	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.out, "cmdline \"alpha=1 beta\""), "stdout:\n%s",
		  r.out);
	run_free(&r);
}

static void check_smp_hello(unsigned n)
{
	char vcpus[16], line[64];
	struct run r;

	snprintf(vcpus, sizeof(vcpus), "%u", n);
	run_lull(&r, QUICK_S, "run", "--vcpus", vcpus, guest("smp-hello"),
		 NULL);

	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	for (unsigned i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "smp-hello: vcpu %u (", i);
		cr_assert_eq(count_lines_with(r.out, line), 1,
			     "vCPU %u not reported once:\n%s", i, r.out);
	}
	cr_assert_eq(count_lines_with(r.out, "smp-hello: vcpu "), n,
		     "stdout:\n%s", r.out);
	snprintf(line, sizeof(line), "smp-hello: PASS vcpus=%u\n", n);
	cr_assert(strstr(r.out, line), "stdout:\n%s", r.out);
	run_free(&r);
}

Test(boot, smp_hello_1_vcpu)
{
	check_smp_hello(1);
}
Test(boot, smp_hello_2_vcpus)
{
	check_smp_hello(2);
}
Test(boot, smp_hello_4_vcpus)
{
	check_smp_hello(4);
}

Test(boot, triple_fault_is_status_125_with_one_line)
{
	struct run r;

	run_lull(&r, QUICK_S, "run", guest("triple-fault"), NULL);

	cr_assert_eq(r.status, 125, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_eq(count_lines(r.err), 1, "want one stderr line, got:\n%s",
		     r.err);
	cr_assert(contains_ci(r.err, "vcpu 0"), "no vCPU named: %s", r.err);
	cr_assert(contains_ci(r.err, "triple fault") ||
			  strstr(r.err, "KVM_EXIT_SHUTDOWN"),
		  "no exit reason: %s", r.err);
	cr_assert(contains_ci(r.err, "rip 0x"), "no RIP: %s", r.err);
	cr_assert_null(strstr(r.out, "FAIL"), "guest kept running:\n%s", r.out);
	run_free(&r);
}

static void check_timeout(const char *name, const char *vcpus)
{
	struct run r;

	run_lull(&r, QUICK_S, "run", "--timeout", "0.5", "--vcpus", vcpus,
		 guest(name), NULL);

	cr_assert_not(r.killed, "lull ignored --timeout 0.5 for %.0f s",
		      r.seconds);
	cr_assert_eq(r.status, 124, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(contains_ci(r.err, "timeout"),
		  "stderr does not say timeout:\n%s", r.err);
	cr_assert_eq(count_lines(r.err), 1, "want one stderr line, got:\n%s",
		     r.err);
	run_free(&r);
}

Test(boot, timeout_spin_1_vcpu)
{
	check_timeout("spin", "1");
}
Test(boot, timeout_spin_4_vcpus)
{
	check_timeout("spin", "4");
}
Test(boot, timeout_halt_forever_1_vcpu)
{
	check_timeout("halt-forever", "1");
}
Test(boot, timeout_halt_forever_4_vcpus)
{
	check_timeout("halt-forever", "4");
}

/* Starts spin, waits for its banner (the VM is running), sends sig. */
static void check_signal(int sig, const char *vcpus, int want_status,
			 const char *name)
{
	struct proc p;
	struct run r;

	cr_assert_eq(
		spawn_lull(&p, "run", "--vcpus", vcpus, guest("spin"), NULL),
		0);
	cr_assert(proc_wait_output(&p, "spin: spinning", 10.0),
		  "spin never started");

	kill(p.pid, sig);
	proc_wait(&p, 10.0, &r);

	cr_assert_not(r.killed, "lull still running 10 s after SIG%s", name);
	cr_assert_not(r.signaled,
		      "lull died of the signal instead of exiting %d",
		      want_status);
	cr_assert_eq(r.status, want_status, "status %d\nstderr:\n%s", r.status,
		     r.err);
	cr_assert(strstr(r.err, name), "stderr does not name SIG%s:\n%s", name,
		  r.err);
	run_free(&r);
}

Test(boot, sigterm_stops_spin_with_143)
{
	check_signal(SIGTERM, "1", 143, "TERM");
}
Test(boot, sigint_stops_spin_with_130)
{
	check_signal(SIGINT, "1", 130, "INT");
}
Test(boot, sigterm_stops_4_vcpu_spin_with_143)
{
	check_signal(SIGTERM, "4", 143, "TERM");
}
Test(boot, sigint_stops_halt_forever_with_130)
{
	struct proc p;
	struct run r;

	cr_assert_eq(spawn_lull(&p, "run", "--vcpus", "2",
				guest("halt-forever"), NULL),
		     0);
	cr_assert(proc_wait_output(&p, "halt-forever: halting", 10.0),
		  "halt-forever never started");

	kill(p.pid, SIGINT);
	proc_wait(&p, 10.0, &r);

	cr_assert_not(r.killed, "lull still running 10 s after SIGINT");
	cr_assert_eq(r.status, 130, "status %d\nstderr:\n%s", r.status, r.err);
	run_free(&r);
}

/*
 * /dev/kvm missing: a private mount namespace with an empty tmpfs over
 * /dev. sh reports 99 when the mount itself is refused.
 */
Test(boot, missing_dev_kvm_is_status_69)
{
	char *argv[] = {
		"/usr/bin/unshare",
		"-m",
		"sh",
		"-c",
		"mount -t tmpfs none /dev || exit 99; exec \"$0\" run \"$1\"",
		(char *)lull_bin(),
		(char *)guest("hello"),
		NULL,
	};
	struct proc p;
	struct run r;

	if (access(argv[0], X_OK))
		cr_skip_test("needs unshare(1) to hide /dev/kvm: %s is missing",
			     argv[0]);
	cr_assert_eq(proc_spawn(&p, argv), 0);
	proc_wait(&p, QUICK_S, &r);
	if (r.status == 99 || !strncmp(r.err, "unshare:", 8))
		cr_skip_test("cannot hide /dev in a mount namespace here: %s",
			     r.err);

	cr_assert_eq(r.status, 69, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_eq(count_lines(r.err), 1, "want one sentence, got:\n%s",
		     r.err);
	cr_assert(strstr(r.err, "/dev/kvm"),
		  "stderr does not name /dev/kvm:\n%s", r.err);
	cr_assert_str_empty(r.out, "stdout:\n%s", r.out);
	run_free(&r);
}

/*
 * No /dev/kvm and no guest file: the guest is what the user got wrong
 * first, and it is checked first: 65 naming the file, not 69.
 */
Test(boot, missing_guest_is_status_65_even_without_dev_kvm)
{
	char *argv[] = {
		"/usr/bin/unshare",
		"-m",
		"sh",
		"-c",
		"mount -t tmpfs none /dev || exit 99; exec \"$0\" run \"$1\"",
		(char *)lull_bin(),
		"/nonexistent/guest.elf",
		NULL,
	};
	struct proc p;
	struct run r;

	if (access(argv[0], X_OK))
		cr_skip_test("needs unshare(1) to hide /dev/kvm: %s is missing",
			     argv[0]);
	cr_assert_eq(proc_spawn(&p, argv), 0);
	proc_wait(&p, QUICK_S, &r);
	if (r.status == 99 || !strncmp(r.err, "unshare:", 8))
		cr_skip_test("cannot hide /dev in a mount namespace here: %s",
			     r.err);

	cr_assert_eq(r.status, 65, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_eq(count_lines(r.err), 1, "want one sentence, got:\n%s",
		     r.err);
	cr_assert(strstr(r.err, "/nonexistent/guest.elf"),
		  "stderr does not name the guest file:\n%s", r.err);
	run_free(&r);
}

Test(boot, console_file_gets_guest_output_not_stdout)
{
	char path[] = "/tmp/lull-console-XXXXXX";
	int fd = mkstemp(path);
	struct run r;
	char *text;

	cr_assert_geq(fd, 0);
	close(fd);
	run_lull(&r, QUICK_S, "run", "--console", path, guest("hello"), NULL);
	text = read_file(path, NULL);
	unlink(path);

	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "hello: PASS hv=lull"), "console file:\n%s",
		  text);
	cr_assert_null(strstr(r.out, "hello:"),
		       "guest output on stdout too:\n%s", r.out);
	free(text);
	run_free(&r);
}

static const char *const vcpu_fields[] = {
	"index",
	"host_wakeups",
	"halts",
	"exits",
	"injections",
	"timers_fired_hard",
	"timers_fired_deferred",
	"ticks_late",
	"ticks_late_delivered",
	"periods_floored",
	"thread_cpu_ns",
	"hard_lateness_ns.p50",
	"hard_lateness_ns.p99",
	"hard_lateness_ns.max",
	"deferred_delay_ns.p50",
	"deferred_delay_ns.p99",
	"deferred_delay_ns.max",
};

/* Guest RAM is offered to KSM wherever the host kernel has it, unless
 * --no-mem-merge; --stats says which. */
Test(boot, guest_ram_offered_to_ksm_unless_asked_not)
{
	bool host_has_ksm = access("/sys/kernel/mm/ksm", F_OK) == 0;
	const char *want = host_has_ksm ? "\"mem_merge\": true" :
					  "\"mem_merge\": false";
	struct run r;

	run_lull(&r, QUICK_S, "run", "--stats", "-", guest("hello"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.out, want), "KSM %s on this host, want %s in:\n%s",
		  host_has_ksm ? "built in" : "absent", want, r.out);
	run_free(&r);

	run_lull(&r, QUICK_S, "run", "--no-mem-merge", "--stats", "-",
		 guest("hello"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.out, "\"mem_merge\": false"),
		  "--no-mem-merge still offered it:\n%s", r.out);
	run_free(&r);
}

/*
 * The guest's CPUID says its TSC is invariant exactly where KVM calls the
 * host's TSC stable (docs/abi.md, leaf 0x80000007): either answer passes,
 * on any host, as long as the two agree.
 */
Test(boot, invariant_tsc_is_kvms_verdict)
{
	const char *guest_says, *json;
	bool stable, invariant;
	struct run r;

	require_guest("abi");
	run_lull(&r, QUICK_S, "run", "--stats", "-", guest("abi"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	json = find_json(r.out);
	cr_assert_not_null(json, "no --stats:\n%s", r.out);
	cr_assert(strstr(json, "\"tsc_stable\": true") ||
			  strstr(json, "\"tsc_stable\": false"),
		  "no tsc_stable in:\n%s", json);
	stable = strstr(json, "\"tsc_stable\": true");
	guest_says = strstr(r.out, "abi: invariant TSC ");
	cr_assert_not_null(guest_says, "the guest did not say:\n%s", r.out);
	invariant = !strncmp(guest_says + strlen("abi: invariant TSC "), "yes", 3);
	cr_log_info("tsc_stable %d, guest sees an invariant TSC %d", stable,
		    invariant);
	cr_assert_eq(invariant, stable, "invariant TSC %d but tsc_stable %d",
		     invariant, stable);
	run_free(&r);
}

Test(boot, stats_to_stdout_has_every_field)
{
	char path[64];
	uint64_t v, wall, cpu, main_cpu, threads_cpu;
	const char *json;
	struct run r;

	run_lull(&r, QUICK_S, "run", "--vcpus", "2", "--stats", "-",
		 guest("smp-hello"), NULL);
	json = find_json(r.out);

	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert(strstr(r.out, "smp-hello: PASS"), "stdout:\n%s", r.out);
	cr_assert_not_null(json, "no JSON object on stdout:\n%s", r.out);
	cr_assert(stats_u64(json, "wall_ns", &wall) && wall > 0, "wall_ns:\n%s",
		  json);
	cr_assert(stats_u64(json, "host_cpu_ns", &cpu) && cpu > 0,
		  "host_cpu_ns:\n%s", json);
	/* the main thread loaded the guest: it ran */
	cr_assert(stats_u64(json, "main_thread_cpu_ns", &main_cpu) &&
			  main_cpu > 0 && main_cpu <= cpu,
		  "main_thread_cpu_ns:\n%s", json);
	threads_cpu = main_cpu;
	cr_assert(stats_has(json, "tsc_stable"), "tsc_stable:\n%s", json);
	cr_assert(stats_has(json, "tsc_held"), "tsc_held:\n%s", json);
	/* no --mem: a PVH ELF's default, 16M (--help) */
	cr_assert(stats_u64(json, "mem_bytes", &v) && v == 16u << 20,
		  "mem_bytes:\n%s", json);
	cr_assert_eq(stats_len(json, "vcpus"), 2, "want 2 vCPUs in:\n%s", json);
	for (int i = 0; i < 2; i++) {
		for (size_t f = 0;
		     f < sizeof(vcpu_fields) / sizeof(vcpu_fields[0]); f++) {
			snprintf(path, sizeof(path), "vcpus[%d].%s", i,
				 vcpu_fields[f]);
			cr_assert(stats_u64(json, path, &v),
				  "%s missing in:\n%s", path, json);
		}
		snprintf(path, sizeof(path), "vcpus[%d].index", i);
		stats_u64(json, path, &v);
		cr_assert_eq(v, (uint64_t)i, "%s is %lu", path, v);
		snprintf(path, sizeof(path), "vcpus[%d].exits", i);
		stats_u64(json, path, &v);
		cr_assert_gt(v, 0, "vCPU %d never exited", i);
		snprintf(path, sizeof(path), "vcpus[%d].thread_cpu_ns", i);
		stats_u64(json, path, &v);
		cr_assert_gt(v, 0, "vCPU %d's thread never ran", i);
		threads_cpu += v;
	}
	/* parts of the whole; the main thread ran on a little after the
	 * process's clock was read */
	cr_assert_leq(threads_cpu, cpu + 1000000,
		      "threads %lu ns, the process %lu ns:\n%s", threads_cpu,
		      cpu, json);
	run_free(&r);
}

Test(boot, stats_file_with_console_file)
{
	char stats[] = "/tmp/lull-stats-XXXXXX";
	int fd = mkstemp(stats);
	uint64_t status = 1, rss;
	struct run r;
	char *json;

	cr_assert_geq(fd, 0);
	close(fd);
	run_lull(&r, QUICK_S, "run", "--console", "/dev/null", "--stats", stats,
		 guest("hello"), NULL);
	json = read_file(stats, NULL);
	unlink(stats);

	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_str_empty(r.out, "stdout not empty:\n%s", r.out);
	cr_assert_not_null(json);
	cr_assert(stats_u64(json, "exit_status", &status) && status == 0, "%s",
		  json);
	cr_assert_eq(stats_len(json, "vcpus"), 1, "%s", json);
	cr_assert(stats_u64(json, "rss_kib", &rss) && rss > 0, "%s", json);
	free(json);
	run_free(&r);
}

static void check_hcall_garbage(const char *vcpus)
{
	uint64_t calls, errors = 0, v;
	static const char *const kinds[] = {
		"op", "slot", "vector", "flags", "period", "pointer", "target",
	};
	const char *json;
	char path[64];
	struct run r;

	run_lull(&r, 60.0, "run", "--vcpus", vcpus, "--stats", "-", "--cmdline",
		 "count=3000", guest("hcall-garbage"), NULL);
	json = find_json(r.out);

	cr_assert_not(r.killed, "lull stalled on garbage hypercalls");
	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	cr_assert(strstr(r.out, "hcall-garbage: PASS calls=3000"),
		  "stdout:\n%s", r.out);
	cr_assert_not_null(json, "no stats:\n%s", r.out);
	cr_assert(stats_u64(json, "hypercalls", &calls) && calls >= 3000, "%s",
		  json);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		snprintf(path, sizeof(path), "hypercall_errors.%s", kinds[k]);
		cr_assert(stats_u64(json, path, &v), "%s missing:\n%s", path,
			  json);
		errors += v;
	}
	cr_assert_gt(errors, 0, "no hypercall errors counted:\n%s", json);
	cr_assert(stats_u64(json, "hypercall_errors.op", &v) && v > 0,
		  "unknown ops not counted:\n%s", json);
	run_free(&r);
}

Test(boot, hcall_garbage_survives_1_vcpu)
{
	check_hcall_garbage("1");
}
Test(boot, hcall_garbage_survives_2_vcpus)
{
	check_hcall_garbage("2");
}

/* The same ELF boots on QEMU's microvm: PVH plus isa-debug-exit. */
Test(boot, hello_boots_on_qemu_microvm)
{
	struct run r;

	run_guest_in_qemu(&r, "hello", 1, 30.0);
	/* isa-debug-exit: QEMU exits (v << 1) | 1, so guest status 0 is 1. */
	cr_assert_eq(r.status, 1, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	cr_assert(strstr(r.out, "hello: PASS hv=kvm vcpus=1"), "stdout:\n%s",
		  r.out);
	run_free(&r);
}

/* A guest exception is the guest runtime's to report: status 3, one line. */
Test(boot, guest_exception_is_reported_by_the_runtime)
{
	struct run r;

	require_guest("exception");
	run_lull(&r, 20.0, "run", guest("exception"), NULL);

	cr_assert_eq(r.status, 3, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	cr_assert(strstr(r.out, "exception 6 (#UD) on vcpu 0: error 0x0 rip 0x"),
		  "stdout:\n%s", r.out);
	run_free(&r);
}

/*
 * `lull run hello.elf | head -1`: a console reader that went away must not
 * take the VM down (SIGPIPE, status 141); the guest's own status stands.
 * With --stats on the same closed stdout the stats are lost, which is 74.
 */
/* lull run ARGS... with stdout on fd and stderr on err_fd; returns its pid. */
static pid_t spawn_lull_onto(int fd, int err_fd, char *const args[])
{
	char *argv[16] = { (char *)lull_bin() };
	pid_t pid;

	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		dup2(fd, 1);
		dup2(err_fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int exit_status_of(pid_t pid)
{
	int ws;

	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	cr_assert(WIFEXITED(ws), "lull was killed by signal %d",
		  WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	return WEXITSTATUS(ws);
}

static int run_into_closed_pipe(const char *stats)
{
	char *args[] = { "run", "--stats", (char *)stats,
			 (char *)guest("hello"), NULL };
	int fds[2], null = open("/dev/null", O_WRONLY);
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	close(fds[0]);
	pid = spawn_lull_onto(fds[1], null, args);
	close(fds[1]);
	close(null);
	return exit_status_of(pid);
}

Test(boot, closed_stdout_does_not_stop_the_vm)
{
	char stats[] = "/tmp/lull-stats-XXXXXX";
	int fd = mkstemp(stats);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(run_into_closed_pipe(stats), 0);
	unlink(stats);
	cr_assert_eq(run_into_closed_pipe("-"), 74);
}

/* Past --console-limit the guest's output is dropped, counted, said once. */
Test(boot, console_limit_drops_and_counts)
{
	char stats[] = "/tmp/lull-stats-XXXXXX";
	uint64_t bytes, dropped;
	int fd = mkstemp(stats);
	char *json;
	struct run r;

	cr_assert_geq(fd, 0);
	close(fd);
	run_lull(&r, QUICK_S, "run", "--console-limit", "10", "--stats", stats,
		 guest("hello"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstderr:\n%s", r.status, r.err);
	cr_assert_eq(strlen(r.out), 10, "stdout:\n%s", r.out);
	cr_assert_eq(count_lines_with(r.err, "--console-limit 10"), 1,
		     "stderr:\n%s", r.err);
	json = read_file(stats, NULL);
	cr_assert(stats_u64(json, "console_bytes", &bytes) &&
			  stats_u64(json, "console_dropped", &dropped),
		  "%s", json);
	cr_assert_gt(bytes, 10);
	cr_assert_eq(dropped, bytes - 10, "%s", json);
	free(json);
	unlink(stats);
	run_free(&r);
}

/*
 * A reader that stops reading: the guest, which polls the UART, waits for
 * it (the console's ring is full), but lull still ends on --timeout, and
 * within a second of it: no vCPU is stuck in a host write.
 */
Test(boot, console_reader_that_stops_does_not_hold_lull)
{
	char *args[] = { "run", "--timeout", "2", "--cmdline", "lines=100000",
			 (char *)guest("hello"), NULL };
	int fds[2], null = open("/dev/null", O_WRONLY);
	double start = now_s();
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = spawn_lull_onto(fds[1], null, args);
	close(fds[1]);
	close(null);
	cr_assert_eq(exit_status_of(pid), 124);
	cr_assert_lt(now_s() - start, 30.0, "lull took %.1f s",
		     now_s() - start);
	close(fds[0]);
}

/*
 * A slow reader loses nothing: the guest waits on the UART instead. fds is
 * the console's pipe or socket pair, read at [0].
 */
static void slow_reader_loses_nothing(int fds[2])
{
	char stats[] = "/tmp/lull-stats-XXXXXX", buf[65536], want[32];
	char *args[] = { "run", "--stats", stats, "--cmdline", "lines=3000",
			 (char *)guest("hello"), NULL };
	int null = open("/dev/null", O_WRONLY), fd = mkstemp(stats);
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap), *json;
	uint64_t dropped;
	ssize_t n;
	pid_t pid;

	cr_assert_geq(fd, 0);
	close(fd);
	pid = spawn_lull_onto(fds[1], null, args);
	close(fds[1]);
	close(null);
	sleep(1); /* the pipe and the console's ring fill up meanwhile */
	while ((n = read(fds[0], buf, sizeof(buf))) > 0) {
		cr_assert_lt(len + (size_t)n, cap);
		memcpy(out + len, buf, (size_t)n);
		len += (size_t)n;
	}
	out[len] = '\0';
	close(fds[0]);
	cr_assert_eq(exit_status_of(pid), 0);
	cr_assert_eq(count_lines_with(out, "hello: line "), 3000);
	snprintf(want, sizeof(want), "hello: line %06d ", 3000);
	cr_assert(strstr(out, want), "the last line is missing");
	json = read_file(stats, NULL);
	cr_assert(stats_u64(json, "console_dropped", &dropped) && !dropped,
		  "%s", json);
	free(json);
	free(out);
	unlink(stats);
}

Test(boot, slow_console_reader_loses_nothing)
{
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	slow_reader_loses_nothing(fds);
}

Test(boot, slow_console_socket_loses_nothing)
{
	int fds[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	slow_reader_loses_nothing(fds);
}

/*
 * lull writes its console without blocking, through a description of its
 * own: the one its stdout shares with the shell keeps its flags (a shell
 * left with O_NONBLOCK on its terminal fails its next read).
 */
Test(boot, stdout_keeps_its_flags)
{
	char *args[] = { "run", (char *)guest("hello"), NULL };
	int fds[2], null = open("/dev/null", O_WRONLY);
	char buf[4096];
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = spawn_lull_onto(fds[1], null, args);
	close(null);
	cr_assert_eq(exit_status_of(pid), 0);
	cr_assert_eq(fcntl(fds[1], F_GETFL) & O_NONBLOCK, 0,
		     "lull left O_NONBLOCK on its stdout's description");
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert(strstr(buf, "hello: PASS"), "stdout:\n%s", buf);
	close(fds[0]);
}
