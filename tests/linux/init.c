// SPDX-License-Identifier: MIT
/*
 * lull-init: the /init of the initramfs that tests and benchmarks boot
 * Debian's stock Linux with (scripts/mkinitramfs packs it). A static
 * glibc program, run by the kernel as PID 1 with /dev/console as its
 * stdin, stdout and stderr.
 *
 * Configured by the kernel command line: Linux hands every `key=value`
 * word it does not know itself to init as an environment variable.
 *
 *   lull_init=check      (default) the boot test: prints
 *                        "lull-init: start ...", checks that
 *                        CLOCK_MONOTONIC advances by 1 s over a 1 s
 *                        nanosleep, never less and at most
 *                        lull_clock_slack_ms (default 250) more (a
 *                        late sleep is tried again, 3 tries); starts
 *                        one thread per CPU, pinned, each checking that
 *                        it runs there; checks that the CPUs online and
 *                        the CPUs init may run on both number
 *                        lull_expect_cpus (when given); prints
 *                        "lull-init: PASS ..." or "lull-init: FAIL why";
 *                        then syncs and powers off, failed or not, so a
 *                        test sees the verdict and the VM still ends.
 *   lull_init=idle       prints "lull-init: ready monotonic_ns=N
 *                        uptime=S" (the guest's clock and /proc/uptime,
 *                        for a benchmark timing boot-to-init) and sleeps
 *                        for good in pause().
 *   lull_init=census     what wakes an idle guest: mounts tracefs, turns
 *                        on the guest's timer tracepoints, prints
 *                        "lull-init: census start ...", sleeps
 *                        lull_census_s (default 20) seconds in one
 *                        nanosleep, prints "lull-init: census end ...",
 *                        then one line per timer function and interrupt
 *                        vector with its count over the sleep ("lull-init:
 *                        census function=tick_sched_timer kind=hrtimer
 *                        count=N"), the lateness of the guest's hrtimers
 *                        by its own clock, and "lull-init: census done";
 *                        then sleeps in pause() like idle mode.
 *   lull_init=cyclictest Debian's cyclictest (rt-tests), which only the
 *                        initramfs bench/latency/cyclictest.py packs
 *                        carries (/usr/bin/cyclictest and its
 *                        libraries): prints "lull-init: ready ...", runs
 *                        it once with the words of lull_cyclictest as
 *                        its arguments (kernel command line
 *                        lull_cyclictest="-m -q -p 95 -D 20 -i 1000 -t 2
 *                        -a -h 5000"; by default those, -t the CPUs
 *                        online), prints each line it writes as
 *                        "lull-init: cyclictest: LINE", but for the
 *                        histogram: its rows with a count, packed as
 *                        "lull-init: cyclictest: hist US:C0,C1 ..." (a
 *                        row per word: latency in µs, then the count of
 *                        each thread), its empty rows not at all; then
 *                        "lull-init: cyclictest done status=N ...". With
 *                        lull_never_early=1, it also traces the guest's
 *                        TSC-deadline writes and local timer entries
 *                        meanwhile and prints, per CPU, "lull-init:
 *                        never-early cpu=N ... early=E ..." and "lull-init:
 *                        never-early done checked=C early=E either=X"
 *                        (X: entries not checked, as perhaps a late
 *                        second interrupt, see never_early.h); before
 *                        them, for each of the first four early entries,
 *                        that CPU's last six events ("never-early early
 *                        cpu=N at=CYCLES write deadline=CYCLES|entry",
 *                        both relative to the early entry). Then it
 *                        powers off.
 *   lull_init=stress     Debian's stress-ng, which only the initramfs
 *                        bench/hostile/hostile.py packs carries: prints
 *                        "lull-init: ready ...", then "lull-init: stress
 *                        start ... local_timer_irqs=N", runs it once with
 *                        the words of lull_stress as its arguments,
 *                        prints each line it writes as "lull-init:
 *                        stress: LINE", then "lull-init: stress done
 *                        seconds=S status=N local_timer_irqs=M" (M: the
 *                        local timer interrupts of all CPUs meanwhile,
 *                        from /proc/interrupts) and powers off.
 *
 * PID 1 must never exit (the kernel panics): every path ends in
 * reboot(RB_POWER_OFF) or pause(), and a poweroff that returns is
 * reported and followed by pause().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "never_early.h"

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL

/*
 * A 1 s sleep may end late by the guest's timer slack, its tick and the
 * host's scheduling of the vCPU (in the nested runner, a loaded emulated
 * host: milliseconds, tens at worst); a quarter second is far beyond that
 * and far below the error of a clock running at a wrong rate or a timer
 * that is lost and found by a later tick.
 */
#define DEFAULT_CLOCK_SLACK_MS 250
/*
 * A host that stops running the whole guest for a moment makes one sleep
 * late by that moment (the kernel's clocksource watchdog, late as much,
 * then reports a "long readout interval"), so a late sleep is tried
 * again: a clock at a wrong rate or a lost timer is late every time. An
 * early end fails at once: no host can make a sleep early.
 */
#define CLOCK_TRIES 3
/* Each pinned thread asks where it runs this many times. */
#define PINNED_CHECKS 1000

static char failure[256];

/* One write per line, so that lines from threads never interleave. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	memcpy(line, "lull-init: ", 11);
	va_start(ap, fmt);
	n = vsnprintf(line + 11, sizeof(line) - 12, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = 11 + (n < (int)sizeof(line) - 12 ? n : (int)sizeof(line) - 13);
	line[n++] = '\n';
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, line, (size_t)n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		memmove(line, line + w, (size_t)(n - w));
		n -= (int)w;
	}
}

/* Records the first failure; the verdict line prints it. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (failure[0])
		return;
	va_start(ap, fmt);
	vsnprintf(failure, sizeof(failure), fmt, ap);
	va_end(ap);
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/*
 * The kernel opens /dev/console for init from the initramfs; should that
 * have failed (no console device node), open it here so the markers still
 * reach somebody.
 */
static void ensure_console(void)
{
	int fd;

	if (fcntl(STDOUT_FILENO, F_GETFD) >= 0)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

static void mount_fs(const char *type, const char *dir)
{
	mkdir(dir, 0555);
	if (mount(type, dir, type, MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) &&
	    errno != EBUSY)
		fail("cannot mount %s on %s: %s", type, dir, strerror(errno));
}

/* A non-negative decimal environment variable, or def. */
static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < 0) {
		fail("%s=%s is not a non-negative number", name, v);
		return def;
	}
	return n;
}

/* /proc/uptime's first field, as the kernel prints it. */
static void read_uptime(char *out, size_t len)
{
	int fd = open("/proc/uptime", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, out, len - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(out, len, "?");
		return;
	}
	out[n] = '\0';
	out[strcspn(out, " \n")] = '\0';
}

/* CLOCK_MONOTONIC over a 1 s nanosleep, ended in [1 s, 1 s + slack]. */
static int64_t sleep_one_second(void)
{
	struct timespec left = { 1, 0 };
	int64_t start = monotonic_ns();

	while (nanosleep(&left, &left))
		if (errno != EINTR) {
			fail("nanosleep: %s", strerror(errno));
			return -1;
		}
	return monotonic_ns() - start;
}

static void check_clock(long slack_ms)
{
	int64_t limit = NS_PER_S + slack_ms * NS_PER_MS, elapsed = 0;

	for (int try = 1; try <= CLOCK_TRIES; try++) {
		elapsed = sleep_one_second();
		if (elapsed < 0)
			return;
		say("clock: a 1 s nanosleep took %lld ns by CLOCK_MONOTONIC (allowed %lld..%lld, try %d of %d)",
		    (long long)elapsed, (long long)NS_PER_S, (long long)limit,
		    try, CLOCK_TRIES);
		if (elapsed < NS_PER_S) {
			fail("clock: a 1 s nanosleep ended after only %lld ns",
			     (long long)elapsed);
			return;
		}
		if (elapsed <= limit)
			return;
	}
	fail("clock: %d nanosleeps of 1 s each took over 1 s + %ld ms, the last %lld ns",
	     CLOCK_TRIES, slack_ms, (long long)elapsed);
}

struct pinned {
	pthread_t thread;
	int cpu;
	int wrong_cpu; /* -1, or where it found itself instead */
	int err; /* sched_getcpu's errno */
};

static void *pinned_main(void *arg)
{
	struct pinned *p = arg;

	for (int i = 0; i < PINNED_CHECKS; i++) {
		int cpu = sched_getcpu();

		if (cpu < 0) {
			p->err = errno;
			break;
		}
		if (cpu != p->cpu) {
			p->wrong_cpu = cpu;
			break;
		}
		if (i % 100 == 99)
			sched_yield();
	}
	return NULL;
}

/* One thread per CPU init may use, each pinned there; returns the count. */
static int check_pinned_threads(const cpu_set_t *allowed)
{
	struct pinned threads[CPU_SETSIZE];
	int count = 0, ran = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		pthread_attr_t attr;
		cpu_set_t one;
		int err;

		if (!CPU_ISSET(cpu, allowed))
			continue;
		threads[count] = (struct pinned){ .cpu = cpu, .wrong_cpu = -1 };
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_init(&attr);
		err = pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		if (!err)
			err = pthread_create(&threads[count].thread, &attr,
					     pinned_main, &threads[count]);
		pthread_attr_destroy(&attr);
		if (err) {
			fail("threads: cannot start a thread on CPU %d: %s", cpu,
			     strerror(err));
			break;
		}
		count++;
	}
	for (int i = 0; i < count; i++) {
		struct pinned *p = &threads[i];

		pthread_join(p->thread, NULL);
		if (p->err)
			fail("threads: sched_getcpu on CPU %d: %s", p->cpu,
			     strerror(p->err));
		else if (p->wrong_cpu >= 0)
			fail("threads: the thread pinned to CPU %d ran on CPU %d",
			     p->cpu, p->wrong_cpu);
		else
			ran++;
	}
	say("threads: %d of %d pinned threads ran only on their CPU", ran,
	    count);
	return count;
}

static void check_cpus(long expect)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t allowed;
	int usable, pinned;

	/* what nproc prints: the CPUs this process may run on */
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		fail("sched_getaffinity: %s", strerror(errno));
		return;
	}
	usable = CPU_COUNT(&allowed);
	say("cpus: online %ld, nproc %d, expected %ld", online, usable,
	    expect);
	pinned = check_pinned_threads(&allowed);
	if (expect > 0 && online != expect)
		fail("cpus: %ld online, expected %ld", online, expect);
	if (expect > 0 && usable != expect)
		fail("cpus: nproc says %d, expected %ld", usable, expect);
	if (pinned != usable)
		fail("threads: started %d of %d", pinned, usable);
}

/*
 * The census. The window is one nanosleep, so that nothing of init's
 * wakes the guest inside it but its own end; tracing starts after the
 * start marker has left the UART (tcdrain) so the marker's transmit
 * interrupts are not counted, and stops before the end marker is
 * printed. The host brackets its own counters with the two markers.
 */
#define DEFAULT_CENSUS_S 20
#define CENSUS_MAX_KEYS 256
#define CENSUS_MAX_LATE 65536
/* hrtimers whose start is remembered for their lateness (by address) */
#define CENSUS_MAX_ARMED 1024

static const char *tracefs;

struct census_key {
	char kind[24]; /* timer, hrtimer, irq */
	char name[64];
	int cpu; /* -1: all CPUs */
	long count;
};

static struct census_key keys[CENSUS_MAX_KEYS];
static int nkeys;

struct armed {
	char hrtimer[24];
	char function[64];
	unsigned long long softexpires;
};

static struct armed armed[CENSUS_MAX_ARMED];
static int narmed;

struct late {
	char function[64];
	long long ns;
};

static struct late late[CENSUS_MAX_LATE];
static int nlate;
static long late_unmatched;

static int trace_write(const char *file, const char *value)
{
	char path[256];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", tracefs, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	ok = write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	close(fd);
	return ok ? 0 : -EIO;
}

/*
 * tracefs is at /sys/kernel/tracing since Linux 4.1; before that, or
 * when it is not mounted there, the same files are under debugfs.
 */
static bool census_mount(void)
{
	static const char *const where[][2] = {
		{ "tracefs", "/sys/kernel/tracing" },
		{ "debugfs", "/sys/kernel/debug" },
	};
	char probe[256];

	for (unsigned i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		const char *dir = !strcmp(where[i][0], "debugfs") ?
					  "/sys/kernel/debug/tracing" :
					  where[i][1];

		if (mount(where[i][0], where[i][1], where[i][0],
			  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) &&
		    errno != EBUSY)
			continue;
		snprintf(probe, sizeof(probe), "%s/tracing_on", dir);
		if (!access(probe, W_OK)) {
			tracefs = dir;
			return true;
		}
	}
	fail("census: no tracefs (neither /sys/kernel/tracing nor debugfs' tracing): %s",
	     strerror(errno));
	return false;
}

/* An event to trace; a missing optional one is said, not failed. */
static void census_enable(const char *event, bool required)
{
	char file[128];
	int r;

	snprintf(file, sizeof(file), "events/%s/enable", event);
	r = trace_write(file, "1");
	if (r && required)
		fail("census: cannot enable %s: %s", event, strerror(-r));
	else if (r)
		say("census event=%s absent (%s)", event, strerror(-r));
}

/* Every line of the trace so far to `each`; false (and failed, for
 * `who`) where it cannot be read. */
static bool trace_read(const char *who, void (*each)(const char *line))
{
	char path[256], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace", tracefs);
	f = fopen(path, "r");
	if (!f) {
		fail("%s: cannot read %s: %s", who, path, strerror(errno));
		return false;
	}
	while (getline(&line, &cap, f) > 0)
		each(line);
	free(line);
	fclose(f);
	return true;
}

static void census_count(const char *kind, const char *name, int cpu)
{
	int i;

	for (i = 0; i < nkeys; i++)
		if (keys[i].cpu == cpu && !strcmp(keys[i].kind, kind) &&
		    !strcmp(keys[i].name, name))
			break;
	if (i == nkeys) {
		if (nkeys == CENSUS_MAX_KEYS)
			return;
		snprintf(keys[i].kind, sizeof(keys[i].kind), "%s", kind);
		snprintf(keys[i].name, sizeof(keys[i].name), "%s", name);
		keys[i].cpu = cpu;
		nkeys++;
	}
	keys[i].count++;
}

/* The value of "field=" in a trace line, up to the next space, or "". */
static void field(const char *line, const char *name, char *out, size_t len)
{
	char pat[32];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), " %s=", name);
	p = strstr(line, pat);
	if (!p) {
		out[0] = '\0';
		return;
	}
	p += strlen(pat);
	n = strcspn(p, " \n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	/* %ps of a function may carry "/0x..." sizes in some kernels */
	out[strcspn(out, "/+")] = '\0';
}

static void census_line(const char *line)
{
	char function[64], hrtimer[24], buf[32];
	const char *p = strchr(line, '[');
	int cpu = p ? atoi(p + 1) : -1;

	if (line[0] == '#')
		return;
	if (strstr(line, " timer_expire_entry:")) {
		field(line, "function", function, sizeof(function));
		census_count("timer", function, -1);
	} else if (strstr(line, " hrtimer_start:")) {
		/*
		 * The latest start of each hrtimer: its soft expiry, on the
		 * clock of its base, as the expiry's "now" is.
		 */
		int i;

		field(line, "hrtimer", hrtimer, sizeof(hrtimer));
		field(line, "function", function, sizeof(function));
		field(line, "softexpires", buf, sizeof(buf));
		for (i = 0; i < narmed; i++)
			if (!strcmp(armed[i].hrtimer, hrtimer))
				break;
		if (i == narmed && narmed < CENSUS_MAX_ARMED)
			narmed++;
		if (i < narmed) {
			snprintf(armed[i].hrtimer, sizeof(armed[i].hrtimer),
				 "%s", hrtimer);
			snprintf(armed[i].function, sizeof(armed[i].function),
				 "%s", function);
			armed[i].softexpires = strtoull(buf, NULL, 10);
		}
	} else if (strstr(line, " hrtimer_expire_entry:")) {
		unsigned long long now;
		int i;

		field(line, "function", function, sizeof(function));
		census_count("hrtimer", function, -1);
		field(line, "hrtimer", hrtimer, sizeof(hrtimer));
		field(line, "now", buf, sizeof(buf));
		now = strtoull(buf, NULL, 10);
		for (i = 0; i < narmed; i++)
			if (!strcmp(armed[i].hrtimer, hrtimer))
				break;
		if (i == narmed || !armed[i].softexpires) {
			late_unmatched++; /* started before the window */
			return;
		}
		if (nlate < CENSUS_MAX_LATE) {
			snprintf(late[nlate].function,
				 sizeof(late[nlate].function), "%s", function);
			late[nlate++].ns =
				(long long)(now - armed[i].softexpires);
		}
		armed[i].softexpires = 0; /* one expiry per start */
	} else if ((p = strstr(line, "_entry: vector="))) {
		/* irq_vectors: local_timer_entry, reschedule_entry, ... */
		const char *start = p;

		while (start > line && start[-1] != ' ')
			start--;
		snprintf(function, sizeof(function), "%.*s",
			 (int)(p - start), start);
		census_count("irq", function, -1);
		census_count("irq", function, cpu);
	}
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* p50, p99, max and min of the lateness of one function, or all ("*"). */
static void census_lateness(const char *function)
{
	static long long v[CENSUS_MAX_LATE];
	int n = 0;

	for (int i = 0; i < nlate; i++)
		if (!strcmp(function, "*") || !strcmp(late[i].function, function))
			v[n++] = late[i].ns;
	if (!n)
		return;
	qsort(v, (size_t)n, sizeof(v[0]), cmp_ll);
	say("census lateness function=%s n=%d min_ns=%lld p50_ns=%lld p99_ns=%lld max_ns=%lld",
	    !strcmp(function, "*") ? "all" : function, n, v[0], v[n / 2],
	    v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], v[n - 1]);
}

static void census(long seconds)
{
	struct timespec left = { seconds, 0 };
	int64_t start, end;

	if (!census_mount())
		return;
	trace_write("tracing_on", "0");
	/* 20 s of an idle guest is a few thousand events; 4 MiB per CPU is ample */
	trace_write("buffer_size_kb", "4096");
	census_enable("timer/timer_expire_entry", true);
	census_enable("timer/hrtimer_expire_entry", true);
	census_enable("timer/hrtimer_start", true);
	census_enable("irq_vectors/local_timer_entry", false);
	census_enable("irq_vectors/reschedule_entry", false);
	census_enable("irq_vectors/call_function_entry", false);
	census_enable("irq_vectors/call_function_single_entry", false);
	census_enable("irq_vectors/irq_work_entry", false);
	trace_write("trace", ""); /* empties the buffer */
	if (failure[0])
		return;
	start = monotonic_ns();
	say("census start monotonic_ns=%lld seconds=%ld tracefs=%s",
	    (long long)start, seconds, tracefs);
	tcdrain(STDOUT_FILENO);
	trace_write("tracing_on", "1");
	while (nanosleep(&left, &left))
		if (errno != EINTR) {
			fail("census: nanosleep: %s", strerror(errno));
			break;
		}
	trace_write("tracing_on", "0");
	end = monotonic_ns();
	say("census end monotonic_ns=%lld slept_ns=%lld", (long long)end,
	    (long long)(end - start));
	if (!trace_read("census", census_line))
		return;
	for (int i = 0; i < nkeys; i++) {
		if (keys[i].cpu >= 0)
			say("census %s=%s kind=%s cpu=%d count=%ld",
			    strcmp(keys[i].kind, "irq") ? "function" : "irq",
			    keys[i].name, keys[i].kind, keys[i].cpu,
			    keys[i].count);
		else
			say("census %s=%s kind=%s count=%ld",
			    strcmp(keys[i].kind, "irq") ? "function" : "irq",
			    keys[i].name, keys[i].kind, keys[i].count);
	}
	census_lateness("*");
	census_lateness("tick_sched_timer");
	say("census done seconds=%ld late_unmatched=%ld", seconds,
	    late_unmatched);
}

/* The never-early check (never_early.h says how it reads the trace). */
static void never_early_shown(const char *line)
{
	say("never-early early %s", line);
}

static struct never_early early_check = { .show = never_early_shown };

/* Before the measurement: the deadline MSR's writes and the timer's
 * entries, on the TSC. Returns false (and says why) where it cannot. */
static bool never_early_start(void)
{
	if (!census_mount())
		return false;
	trace_write("tracing_on", "0");
	if (trace_write("trace_clock", "x86-tsc")) {
		say("never-early: no x86-tsc trace clock: not checked");
		return false;
	}
	/* 20 s at 1 kHz is 40,000 events per CPU, ~2 MiB */
	trace_write("buffer_size_kb", "8192");
	if (trace_write("events/msr/write_msr/filter", "msr == 0x6e0") ||
	    trace_write("events/msr/write_msr/enable", "1") ||
	    trace_write("events/irq_vectors/local_timer_entry/enable", "1")) {
		say("never-early: no msr or irq_vectors tracepoints: not checked");
		return false;
	}
	trace_write("trace", "");
	trace_write("tracing_on", "1");
	return true;
}

static void never_early_line(const char *line)
{
	never_early_take(&early_check, line);
}

/* After it: one line per CPU and the total. */
static void never_early_report(void)
{
	long checked = 0, early = 0, either = 0;

	trace_write("tracing_on", "0");
	if (!trace_read("never-early", never_early_line))
		return;
	for (int i = 0; i < NEVER_EARLY_CPUS; i++) {
		struct never_early_cpu *c = &early_check.cpu[i];

		if (!c->seen)
			continue;
		say("never-early cpu=%d deadlines=%ld entries=%ld checked=%ld early=%ld least_cycles=%lld unarmed=%ld either=%ld",
		    i, c->writes, c->entries, c->checked, c->early, c->least,
		    c->unarmed, c->either);
		checked += c->checked;
		early += c->early;
		either += c->either;
	}
	/* a finding, not init's failure: the host judges (a reference
	 * VMM's early timers are measured, not failed) */
	say("never-early done checked=%ld early=%ld either=%ld", checked, early,
	    either);
}

/*
 * cyclictest. It runs as a child of init with its stdout and stderr on a
 * pipe, so that nothing reaches the console while it measures (it writes
 * only at its end with -q) and its lines can be marked for the host,
 * which reads them off the console. The histogram has a row per
 * microsecond up to -h ("000123 000000\t000002"), nearly all of them
 * empty: those are not printed, and the others are packed, several to a
 * line, as "123:0,2". Each console byte is a VM exit, and init's lines
 * go through the tty layer, whose UART driver waits for the transmitter
 * to empty: from QEMU's guest in the nested runner they came at under a
 * kilobyte a second, where cyclictest's own rows, 20 bytes each with the
 * mark, took minutes; packed they take seconds.
 */
#define CYCLICTEST "/usr/bin/cyclictest"
#define DEFAULT_CYCLICTEST_ARGS "-m -q -p 95 -D 20 -i 1000 -a -h 5000"
/* words on the command line of a program init runs (cyclictest, stress-ng) */
#define RELAYED_MAX_ARGS 64
#define STRESS_NG "/usr/bin/stress-ng"
/* a packed histogram line, the mark not counted */
#define HIST_LINE 240

/* A line of any length, prefixed, in one write like say()'s. */
static void say_line(const char *prefix, const char *text, size_t len)
{
	size_t plen = strlen(prefix);
	char *line = malloc(plen + len + 1);
	size_t n = plen + len + 1, off = 0;

	if (!line)
		return;
	memcpy(line, prefix, plen);
	memcpy(line + plen, text, len);
	line[plen + len] = '\n';
	while (off < n) {
		ssize_t w = write(STDOUT_FILENO, line + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(line);
}

/*
 * A histogram row ("000123 000000\t000002") packed onto the pending line
 * as " 123:0,2"; false when line is no row. Empty rows add nothing.
 */
static bool pack_histogram_row(const char *line, char *hist, size_t *len,
			       long *empty)
{
	char word[256];
	const char *p = line + 6;
	int n;

	if (strspn(line, "0123456789") != 6 || (*p != ' ' && *p != '\t'))
		return false;
	if (p[strspn(p, "0 \t")] == '\0') {
		(*empty)++;
		return true;
	}
	n = snprintf(word, sizeof(word), " %ld:", strtol(line, NULL, 10));
	for (bool first = true; *(p += strspn(p, " \t")); first = false) {
		char *end;
		long count = strtol(p, &end, 10);

		if (end == p || n >= (int)sizeof(word) - 24)
			return false; /* not a row after all: printed as it is */
		n += snprintf(word + n, sizeof(word) - (size_t)n, "%s%ld",
			      first ? "" : ",", count);
		p = end;
	}
	if (*len + (size_t)n > HIST_LINE) {
		say_line("lull-init: cyclictest: hist", hist, *len);
		*len = 0;
	}
	memcpy(hist + *len, word, (size_t)n);
	*len += (size_t)n;
	return true;
}

/*
 * devtmpfs on /dev and a tmpfs on /dev/shm: cyclictest holds
 * /dev/cpu_dma_latency at 0 while it runs, as on a real-time system, and
 * keeps its running status in /dev/shm; stress-ng uses both and /dev/null.
 * Missing, they only cost warnings. devtmpfs has a console too: init's
 * open descriptors are unaffected.
 */
static void mount_dev(const char *who)
{
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, NULL)) {
		say("%s: cannot mount devtmpfs on /dev: %s", who,
		    strerror(errno));
		return;
	}
	mkdir("/dev/shm", 01777);
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL))
		say("%s: cannot mount tmpfs on /dev/shm: %s", who,
		    strerror(errno));
}

/*
 * argv[0] = name, then the words of `words` (split in place); false, with
 * the failure recorded, when there are more than RELAYED_MAX_ARGS - 3
 * (room is left for two more words and the NULL).
 */
static bool split_args(const char *name, char *words, char **argv, int *argc)
{
	*argc = 0;
	argv[(*argc)++] = (char *)name;
	for (char *w = strtok(words, " \t"); w; w = strtok(NULL, " \t")) {
		if (*argc == RELAYED_MAX_ARGS - 2) {
			fail("%s: more than %d arguments", name,
			     RELAYED_MAX_ARGS - 3);
			return false;
		}
		argv[(*argc)++] = w;
	}
	argv[*argc] = NULL;
	return true;
}

/*
 * Runs path with argv, its stdout and stderr to a pipe, and prints each
 * line it writes as "PREFIX LINE", but for lines take() consumes (NULL:
 * none). Returns its exit status (128 + the signal that ended it), or -1
 * with the failure recorded.
 */
static int run_relayed(const char *path, char *const argv[], const char *prefix,
		       bool (*take)(const char *line, void *ctx), void *ctx)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int fds[2], status;
	pid_t pid;
	FILE *out;

	if (pipe2(fds, O_CLOEXEC)) {
		fail("%s: pipe: %s", argv[0], strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fail("%s: fork: %s", argv[0], strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execv(path, argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	while (out && (len = getline(&line, &cap, out)) > 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (take && take(line, ctx))
			continue;
		say_line(prefix, line, (size_t)len);
	}
	free(line);
	if (out)
		fclose(out);
	else
		close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fail("%s: waitpid: %s", argv[0], strerror(errno));
			return -1;
		}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* cyclictest's histogram rows, packed until a line that is not one */
struct hist_pack {
	char line[HIST_LINE + 256];
	size_t len;
	long empty;
};

static void flush_histogram(struct hist_pack *h)
{
	if (h->len)
		say_line("lull-init: cyclictest: hist", h->line, h->len);
	h->len = 0;
}

static bool take_histogram_row(const char *line, void *ctx)
{
	struct hist_pack *h = ctx;

	if (pack_histogram_row(line, h->line, &h->len, &h->empty))
		return true;
	flush_histogram(h); /* before the line that ended the rows */
	return false;
}

static void cyclictest(const char *args)
{
	char *argv[RELAYED_MAX_ARGS + 1], *words;
	char cpus[24];
	static struct hist_pack hist;
	int argc, status;
	bool checking;

	if (access(CYCLICTEST, X_OK)) {
		fail("cyclictest: no %s in the initramfs (bench/latency/cyclictest.py builds one that has it)",
		     CYCLICTEST);
		return;
	}
	mount_dev("cyclictest");
	snprintf(cpus, sizeof(cpus), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	words = strdup(args && *args ? args : DEFAULT_CYCLICTEST_ARGS);
	if (!words) {
		fail("cyclictest: out of memory");
		return;
	}
	if (!split_args("cyclictest", words, argv, &argc)) {
		free(words);
		return;
	}
	if (!args || !*args) {
		argv[argc++] = "-t";
		argv[argc++] = cpus;
		argv[argc] = NULL;
	}

	say("cyclictest start monotonic_ns=%lld cpus=%s args=%s%s%s",
	    (long long)monotonic_ns(), cpus,
	    args && *args ? args : DEFAULT_CYCLICTEST_ARGS,
	    args && *args ? "" : " -t ", args && *args ? "" : cpus);
	checking = env_long("lull_never_early", 0) && never_early_start();
	/* the marker's UART interrupts end before the measurement starts */
	tcdrain(STDOUT_FILENO);
	status = run_relayed(CYCLICTEST, argv, "lull-init: cyclictest: ",
			     take_histogram_row, &hist);
	flush_histogram(&hist);
	free(words);
	if (status < 0)
		return;
	say("cyclictest done monotonic_ns=%lld status=%d empty_rows=%ld",
	    (long long)monotonic_ns(), status, hist.empty);
	if (checking)
		never_early_report();
	if (status)
		fail("cyclictest: exit status %d", status);
}

/* The local timer interrupts of every CPU so far (/proc/interrupts, LOC). */
static unsigned long long local_timer_interrupts(void)
{
	unsigned long long sum = 0;
	char line[4096];
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " ");

		if (strncmp(p, "LOC:", 4))
			continue;
		for (p += 4;;) {
			char *end;
			unsigned long long n = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += n;
			p = end;
		}
		break;
	}
	fclose(f);
	return sum;
}

static void stress(const char *args)
{
	char *argv[RELAYED_MAX_ARGS + 1], *words;
	unsigned long long loc;
	long long t0;
	int argc, status;

	if (access(STRESS_NG, X_OK)) {
		fail("stress: no %s in the initramfs (bench/hostile/hostile.py builds one that has it)",
		     STRESS_NG);
		return;
	}
	if (!args || !*args) {
		fail("stress: no lull_stress=\"...\" (stress-ng's arguments) on the command line");
		return;
	}
	mount_dev("stress");
	words = strdup(args);
	if (!words) {
		fail("stress: out of memory");
		return;
	}
	if (!split_args("stress-ng", words, argv, &argc)) {
		free(words);
		return;
	}
	loc = local_timer_interrupts();
	t0 = monotonic_ns();
	say("stress start monotonic_ns=%lld cpus=%ld local_timer_irqs=%llu args=%s",
	    t0, sysconf(_SC_NPROCESSORS_ONLN), loc, args);
	status = run_relayed(STRESS_NG, argv, "lull-init: stress: ", NULL, NULL);
	free(words);
	if (status < 0)
		return;
	say("stress done monotonic_ns=%lld seconds=%.3f status=%d local_timer_irqs=%llu",
	    (long long)monotonic_ns(), (double)(monotonic_ns() - t0) / 1e9, status,
	    local_timer_interrupts() - loc);
	if (status)
		fail("stress: stress-ng's exit status %d", status);
}

static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	say("FAIL reboot(RB_POWER_OFF) returned: %s", strerror(errno));
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

static void census_mode(void)
{
	census(env_long("lull_census_s", DEFAULT_CENSUS_S));
}

static void cyclictest_mode(void)
{
	cyclictest(getenv("lull_cyclictest"));
}

static void stress_mode(void)
{
	stress(getenv("lull_stress"));
}

/* The modes that say "ready" first: each does its work (idle none), then
 * powers off or sleeps for good. */
static const struct {
	const char *name;
	void (*work)(void);
	bool then_power_off;
} modes[] = {
	{ "idle", NULL, false },
	{ "census", census_mode, false },
	{ "cyclictest", cyclictest_mode, true },
	{ "stress", stress_mode, true },
};

int main(void)
{
	const char *mode = getenv("lull_init");
	long expect, slack_ms;
	struct utsname uts;
	char uptime[64];

	ensure_console();
	mount_fs("proc", "/proc");
	mount_fs("sysfs", "/sys");
	if (!mode || !*mode)
		mode = "check";
	expect = env_long("lull_expect_cpus", 0);
	slack_ms = env_long("lull_clock_slack_ms", DEFAULT_CLOCK_SLACK_MS);
	uname(&uts);
	read_uptime(uptime, sizeof(uptime));

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(mode, modes[i].name))
			continue;
		say("ready monotonic_ns=%lld uptime=%s kernel=%s",
		    (long long)monotonic_ns(), uptime, uts.release);
		if (modes[i].work)
			modes[i].work();
		if (failure[0])
			say("FAIL %s", failure);
		if (modes[i].then_power_off)
			power_off();
		sleep_forever();
	}

	say("start mode=%s kernel=%s uptime=%s", mode, uts.release, uptime);
	if (strcmp(mode, "check"))
		fail("unknown lull_init=%s (check, idle, census, cyclictest or stress)",
		     mode);
	else {
		check_clock(slack_ms);
		check_cpus(expect);
	}
	if (failure[0])
		say("FAIL %s", failure);
	else
		say("PASS cpus=%ld clock_slack_ms=%ld", sysconf(_SC_NPROCESSORS_ONLN),
		    slack_ms);
	power_off();
	sleep_forever();
}
