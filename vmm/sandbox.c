// SPDX-License-Identifier: MIT
#include <errno.h>
#include <linux/capability.h>
#include <linux/kvm.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "vmm/exit_status.h"
#include "vmm/sandbox.h"

/* Above every x86-64 system call number: the report's name table. */
#define SYSCALL_NAMES 512

static bool use_seccomp;
static char *syscall_names[SYSCALL_NAMES];
/* The confined thread's name, for the report: read in a signal handler. */
static __thread char thread_name[16] = "lull";

struct rule {
	int nr;
	unsigned nr_args;
	struct scmp_arg_cmp args[2];
};

/* Designated, so that the unused args stay zero without a warning. */
#define ANY(call) { .nr = SCMP_SYS(call) }
#define IF1(call, a) { .nr = SCMP_SYS(call), .nr_args = 1, .args = { a } }
#define IF2(call, a, b)                                                  \
	{ .nr = SCMP_SYS(call), .nr_args = 2, .args = { a, b } }

/* Argument n equals v; argument n, masked, equals v. Every field named:
 * libseccomp's SCMP_A* macros leave some to the default. */
#define EQ(n, v)                                                         \
	((struct scmp_arg_cmp){ .arg = (n), .op = SCMP_CMP_EQ,            \
				.datum_a = (scmp_datum_t)(v), .datum_b = 0 })
#define MASKED_EQ(n, mask, v)                                            \
	((struct scmp_arg_cmp){ .arg = (n), .op = SCMP_CMP_MASKED_EQ,     \
				.datum_a = (mask), .datum_b = (scmp_datum_t)(v) })

/* The pid tgkill may target: ours. */
#define OWN_PID EQ(0, getpid())

#define ADD(rules) add_rules(ctx, rules, sizeof(rules) / sizeof(rules[0]))

static int add_rules(scmp_filter_ctx ctx, const struct rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int e = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, r[i].nr,
					       r[i].nr_args, r[i].args);

		if (e < 0)
			return e;
	}
	return 0;
}

/* Every thread, from its confinement to its exit. */
static int allow_common(scmp_filter_ctx ctx)
{
	const struct rule r[] = {
		/* stderr, the console, --stats, and the eventfd wakes */
		ANY(write),
		/* locks and condition variables */
		ANY(futex),
		/* the kernel may restart an interrupted futex or wait */
		ANY(restart_syscall),
		ANY(clock_gettime), /* when the vDSO falls back */
		ANY(rt_sigreturn),
		/* glibc blocks signals while a thread exits, abort() too */
		ANY(rt_sigprocmask),
		/* pthread_kill: kicks, the stop signal, abort() */
		ANY(getpid),
		ANY(gettid),
		IF1(tgkill, OWN_PID),
		/* glibc hands a finished thread's stack back this way */
		IF1(madvise, EQ(2, MADV_DONTNEED)),
		ANY(exit),
		ANY(exit_group),
	};

	return ADD(r);
}

/*
 * What the sanitizers' runtimes do on their own: map shadow and report
 * memory, read /proc/self/maps for a report, and LeakSanitizer's exit-time
 * scan stops the other threads with ptrace from a cloned helper. Only in
 * builds that have them.
 */
static int allow_sanitizers(scmp_filter_ctx ctx)
{
#ifdef LULL_SANITIZED
	const struct rule r[] = {
		ANY(mmap),
		ANY(munmap),
		ANY(mprotect),
		ANY(madvise),
		ANY(mremap),
		ANY(sched_yield),
		ANY(sigaltstack),
		ANY(prctl),
		ANY(clone),
		ANY(ptrace),
		ANY(wait4),
		ANY(openat),
		ANY(open), /* the runtime's own, not libc's openat */
		ANY(read),
		ANY(pread64),
		ANY(close),
		ANY(getdents64),
		ANY(getdents), /* LeakSanitizer lists /proc/self/task */
		ANY(readlink),
		ANY(lseek),
		ANY(newfstatat),
		ANY(fstat),
		ANY(rt_sigaction),
		ANY(getppid),
		ANY(sched_getaffinity),
		ANY(nanosleep),
		ANY(clock_nanosleep),
		ANY(prlimit64),
		ANY(getrlimit),
		ANY(uname),
		ANY(kill),
		ANY(pipe2),
	};

	return ADD(r);
#else
	(void)ctx;
	return 0;
#endif
}

/*
 * The main thread, from the moment every vCPU runs: it waits for a stop
 * (signals, --timeout) writing the console meanwhile, stops the vCPUs,
 * drains the console, writes --stats and tears the VM down.
 */
static int allow_main(scmp_filter_ctx ctx, int console_wake_fd,
		      int console_out_fd)
{
	const struct rule r[] = {
		ANY(ppoll), /* the wait for a reason to stop */
		/* the console: its wake, and room at a destination that
		 * cannot be made non-blocking or that is a socket */
		IF1(read, EQ(0, (scmp_datum_t)console_wake_fd)),
		ANY(poll),
		IF1(sendto, EQ(0, (scmp_datum_t)console_out_fd)),
		/* --stats: stdio's buffer, the resident-page count, the
		 * process's /proc status opened at start, the CPU clock */
		ANY(newfstatat),
		ANY(fstat),
		ANY(mincore),
		ANY(pread64),
		/* malloc and free, never for code */
		ANY(brk),
		IF2(mmap, MASKED_EQ(2, PROT_EXEC, 0),
		    MASKED_EQ(3, MAP_ANONYMOUS, MAP_ANONYMOUS)),
		/* teardown: guest RAM, kvm_run pages, rings, thread stacks,
		 * the fds and the vCPUs' kick timers */
		ANY(munmap),
		ANY(close),
		ANY(timer_delete),
	};

	return ADD(r);
}

/* The vCPU thread: the KVM_RUN loop, its kick timer and its idle wait. */
static int allow_vcpu(scmp_filter_ctx ctx, int vcpu_fd, int ring_fd)
{
#define VCPU_IOCTL(req)                                         \
	IF2(ioctl, EQ(0, (scmp_datum_t)vcpu_fd), \
	    MASKED_EQ(1, 0xffffffffu, (scmp_datum_t)(req)))
	const struct rule r[] = {
		VCPU_IOCTL(KVM_RUN),
		VCPU_IOCTL(KVM_INTERRUPT), /* where kvm_run cannot carry it */
		VCPU_IOCTL(KVM_NMI), /* an NMI another vCPU sent */
		VCPU_IOCTL(KVM_GET_REGS), /* without KVM_CAP_SYNC_REGS */
		VCPU_IOCTL(KVM_SET_REGS),
		VCPU_IOCTL(KVM_SET_SREGS), /* an AP started by a SIPI */
		/* the guest TSC, for a TSC deadline where it is not stable */
		VCPU_IOCTL(KVM_GET_MSRS),
		/* IA32_APIC_BASE as the guest set it, for KVM's CPUID.1 */
		VCPU_IOCTL(KVM_SET_MSRS),
		/* the halted vCPU's sleep */
		IF1(io_uring_enter,
		    EQ(0, (scmp_datum_t)ring_fd)),
		ANY(timer_settime), /* the kick timer */
		ANY(rt_sigtimedwait), /* takes a kick that came too late */
		ANY(sched_yield), /* a halt poll gives way to other threads */
		/* its context switches, read for --stats as it ends */
		IF1(getrusage, EQ(0, RUSAGE_THREAD)),
	};
#undef VCPU_IOCTL

	return ADD(r);
}

/* --trace-late: the vCPU thread reads its own schedstat, and only that. */
static int allow_schedstat(scmp_filter_ctx ctx, int fd)
{
	const struct rule r[] = {
		IF1(pread64, EQ(0, (scmp_datum_t)fd)),
	};

	return ADD(r);
}

static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		buf[at++] = *s++;
	return at;
}

static size_t put_num(char *buf, size_t at, size_t cap, unsigned long v,
		      unsigned base)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n && at + 1 < cap)
		buf[at++] = digits[--n];
	return at;
}

/* Async-signal-safe: no stdio, no malloc; the names were resolved at init. */
static void forbidden_call(int sig, siginfo_t *si, void *ucontext)
{
	const ucontext_t *uc = ucontext;
	unsigned nr = (unsigned)si->si_syscall;
	char msg[320];
	size_t n = 0;
	ssize_t w;

	(void)sig;
	n = put(msg, n, sizeof(msg), "lull: thread ");
	n = put(msg, n, sizeof(msg), thread_name);
	n = put(msg, n, sizeof(msg), " made system call ");
	if (nr < SYSCALL_NAMES && syscall_names[nr]) {
		n = put(msg, n, sizeof(msg), syscall_names[nr]);
		n = put(msg, n, sizeof(msg), " (");
		n = put_num(msg, n, sizeof(msg), nr, 10);
		n = put(msg, n, sizeof(msg), ")");
	} else {
		n = put_num(msg, n, sizeof(msg), nr, 10);
	}
	if (nr == SYS_ioctl) {
		n = put(msg, n, sizeof(msg), " request 0x");
		n = put_num(msg, n, sizeof(msg),
			    (unsigned long)uc->uc_mcontext.gregs[REG_RSI], 16);
	}
	n = put(msg, n, sizeof(msg),
		", which its seccomp filter forbids: a lull bug; stopping (--no-seccomp runs without the filter)\n");
	w = write(STDERR_FILENO, msg, n);
	(void)w;
	syscall(SYS_exit_group, LULL_EXIT_SECCOMP);
}

int sandbox_init(bool seccomp)
{
	struct sigaction sa = { .sa_sigaction = forbidden_call,
				.sa_flags = SA_SIGINFO };

	use_seccomp = seccomp;
	if (!seccomp)
		return 0;
	for (int nr = 0; nr < SYSCALL_NAMES; nr++)
		syscall_names[nr] =
			seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL) < 0 ? -errno : 0;
}

/* Every capability set of this thread to empty, the bounding set first
 * (dropping it needs CAP_SETPCAP, which goes last). */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct none[2] = { { 0 } };

	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL) /* a kernel without ambient capabilities */
		return -errno;
	return syscall(SYS_capset, &hdr, none) < 0 ? -errno : 0;
}

/*
 * One thread's confinement, in two steps around the thread's own rules.
 * The filter's default is a trap into forbidden_call(), so the report
 * names the call instead of the process just dying of SIGSYS.
 */
static int begin(const char *name, scmp_filter_ctx *ctx, char *err,
		 size_t errlen)
{
	int r;

	*ctx = NULL;
	snprintf(thread_name, sizeof(thread_name), "%s", name);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: cannot set no_new_privs: %s", name,
			 strerror(-r));
		return r;
	}
	r = drop_capabilities();
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot drop capabilities: %s", name,
			 strerror(-r));
		return r;
	}
	if (!use_seccomp)
		return 0;
	*ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!*ctx) {
		snprintf(err, errlen, "%s: cannot build a seccomp filter",
			 name);
		return -ENOMEM;
	}
	r = allow_common(*ctx);
	return r < 0 ? r : allow_sanitizers(*ctx);
}

/* r: what adding the rules returned; with a filter built, loads it. */
static int finish(scmp_filter_ctx ctx, int r, char *err, size_t errlen)
{
	if (!ctx)
		return r;
	if (r < 0)
		snprintf(err, errlen, "%s: cannot build a seccomp filter: %s",
			 thread_name, strerror(-r));
	else if ((r = seccomp_load(ctx)) < 0)
		snprintf(err, errlen,
			 "%s: cannot install its seccomp filter: %s",
			 thread_name, strerror(-r));
	seccomp_release(ctx);
	return r;
}

int sandbox_enter_main(int console_wake_fd, int console_out_fd, char *err,
		       size_t errlen)
{
	scmp_filter_ctx ctx;
	int r = begin("main", &ctx, err, errlen);

	if (r < 0 || !ctx)
		return finish(ctx, r, err, errlen);
	return finish(ctx, allow_main(ctx, console_wake_fd, console_out_fd),
		      err, errlen);
}

int sandbox_enter_vcpu(unsigned index, int vcpu_fd, int ring_fd,
		       int sched_fd, char *err, size_t errlen)
{
	scmp_filter_ctx ctx;
	char name[16];
	int r;

	snprintf(name, sizeof(name), "vcpu%u", index);
	r = begin(name, &ctx, err, errlen);
	if (r < 0 || !ctx)
		return finish(ctx, r, err, errlen);
	r = allow_vcpu(ctx, vcpu_fd, ring_fd);
	if (r >= 0 && sched_fd >= 0)
		r = allow_schedstat(ctx, sched_fd);
	return finish(ctx, r, err, errlen);
}
