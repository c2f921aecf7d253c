/* SPDX-License-Identifier: MIT */
/*
 * runner: run `lull` (or any program) as a child process for the
 * integration tests, and read what it left behind.
 *
 *   struct run r;
 *   run_lull(&r, 10.0, "run", "--vcpus", "2", guest("hello"), NULL);
 *   cr_assert_eq(r.status, 0, "%s", r.err);
 *   run_free(&r);
 *
 * stdout and stderr go to temporary files (no pipe can fill up and stall
 * the child); the safety limit kills the child with SIGKILL when it runs
 * over, and the test then sees r.killed set. The child dies with the test
 * process (PR_SET_PDEATHSIG), so a crashed test leaves no VM behind.
 *
 * The paths come from the environment meson gives the test:
 * LULL_BIN (the lull binary) and LULL_GUESTS (the folder of guest ELFs).
 */
#ifndef LULL_TEST_RUNNER_H
#define LULL_TEST_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* lull's status for a guest that asked for a reset (--help). */
#define REBOOT_STATUS 32

/* A child that is still running. */
struct proc {
	pid_t pid;
	int out_fd, err_fd; /* the capture files, open for reading */
	double started; /* CLOCK_MONOTONIC seconds at spawn */
};

/* A child that has ended. */
struct run {
	int status; /* exit status; 128 + n if killed by signal n */
	bool signaled; /* ended by a signal (not by exit) */
	bool killed; /* ran over its safety limit: the runner killed it */
	double seconds; /* spawn to reaped */
	char *out, *err; /* everything it wrote, NUL-terminated */
	/* lull's note on a KVM without hardware virtualization, taken out
	 * of err (empty where there was none) */
	char kvm_note[320];
};

/* The lull binary and the path of guest NAME ("hello" -> .../hello.elf). */
const char *lull_bin(void);
const char *guest(const char *name);

/*
 * Why this host cannot run VMs ("cannot open /dev/kvm: ..."), or NULL when
 * it can. The suites that need KVM call it once, before any test (see
 * kvm_main.c), rather than skipping test by test.
 */
const char *kvm_unavailable(void);
/* The KVM behind /dev/kvm, as `lull info` names it (kvm_host.h). */
struct host_kvm {
	char module[16]; /* kvm_intel, kvm_amd, kvm_pvm or other */
	bool hardware; /* VMX or SVM runs the guest */
};
const struct host_kvm *host_kvm(void);
/*
 * Cases a QEMU/KVM reference is known to answer wrongly on a given KVM
 * (host_kvm()->module), which lull answers as the architecture says:
 * there the reference cannot judge them. Each test keeps its own table.
 */
struct reference_wrong {
	const char *kvm;
	const char *cases[4];
};
/* Is case name[0..len) in the table's row for this host's KVM? */
bool reference_wrong_here(const struct reference_wrong *table, size_t rows,
			  const char *name, size_t len);
#define REFERENCE_WRONG_HERE(table, name, len) \
	reference_wrong_here((table), sizeof(table) / sizeof(*(table)), \
			     (name), (len))
/*
 * Skips the calling test, saying so, where /dev/kvm is not hardware
 * virtualization (kvm_pvm): `what` completes "whose instruction emulator
 * ..." with what the test's guest needs of it that it lacks.
 */
void require_hardware_kvm(const char *what);
/*
 * Skips the calling test when guests/meson.build does not build guest NAME
 * (LULL_GUEST_NAMES): a guest that is listed but missing still fails.
 */
void require_guest(const char *name);

/* argv[0] is the program; NULL-terminated. Returns 0 or -errno. */
int proc_spawn(struct proc *p, char *const argv[]);
/* Waits up to limit_s seconds since spawn, then SIGKILLs the child. */
void proc_wait(struct proc *p, double limit_s, struct run *r);
/* Polls the child's stdout until it contains needle; false on exit or
 * after limit_s seconds. */
bool proc_wait_output(struct proc *p, const char *needle, double limit_s);

/* Finds prog in $PATH; its path in out. False if it is not there. */
bool in_path(const char *prog, char *out, size_t len);

/* spawn + wait; argv NULL-terminated, without the lull binary. */
void run_lull(struct run *r, double limit_s, ...) __attribute__((sentinel));
/*
 * Guest NAME on the QEMU/KVM reference (scripts/qemu_ref.py: microvm with
 * KVM's in-kernel irqchip, the -cpu model it probes, debug-exit at 0xf4 as
 * lull has it) on vcpus vCPUs. Skips the test where QEMU is not installed
 * or no CPU model boots on this host's KVM (saying QEMU's words); fails it
 * when QEMU outlives limit_s. The model used is logged.
 */
void run_guest_in_qemu(struct run *r, const char *name, unsigned vcpus,
		       double limit_s);
void run_lullv(struct run *r, double limit_s, char *const args[]);
/* spawn lull with args; argv NULL-terminated, without the lull binary. */
int spawn_lull(struct proc *p, ...) __attribute__((sentinel));
void run_free(struct run *r);

/* A NULL-terminated list of words, for assert_sentence and the like. */
#define USAGE(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The first line of err starts "lull: " and err mentions each of want. */
void assert_sentence(const char *err, const char *const want[]);

/* Lines in s (a last line without '\n' counts), and lines containing sub. */
unsigned count_lines(const char *s);
unsigned count_lines_with(const char *s, const char *sub);
/* Case-insensitive strstr. */
bool contains_ci(const char *s, const char *sub);

/*
 * A tiny extractor for lull's --stats JSON (only what the tests need):
 * path is dot-separated keys and [index]es, e.g. "vcpus[1].host_wakeups",
 * "hypercall_errors.op", "vcpus[0].hard_lateness_ns.p99".
 * stats_u64 reads a non-negative integer; stats_len the length of an
 * array; stats_has tells whether the path exists. All return false/-1 on
 * a missing path or malformed JSON.
 */
bool stats_u64(const char *json, const char *path, uint64_t *out);
int stats_len(const char *json, const char *path);
bool stats_has(const char *json, const char *path);
/* vcpus[vcpu].field of --stats JSON; fails the test if it is missing. */
uint64_t vcpu_stat(const char *json, unsigned vcpu, const char *field);

/*
 * Runs guest NAME with --vcpus, --timer-mode and --cmdline; fails the test
 * unless it ends with status 0 within limit_s, prints "NAME: PASS" and no
 * FAIL.
 */
void check_guest(const char *name, const char *vcpus, const char *mode,
		 const char *cmdline, double limit_s);

/* The --stats object inside stdout that also holds guest output: the
 * first '{' that starts a line (NULL if none). */
const char *find_json(const char *out);

/* Reads a whole file, NUL-terminated (NULL on error; free it). */
char *read_file(const char *path, size_t *len);
/* CLOCK_MONOTONIC in seconds. */
double now_s(void);

#endif
