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
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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

	if (!strcmp(mode, "idle")) {
		say("ready monotonic_ns=%lld uptime=%s kernel=%s",
		    (long long)monotonic_ns(), uptime, uts.release);
		if (failure[0])
			say("FAIL %s", failure);
		sleep_forever();
	}

	say("start mode=%s kernel=%s uptime=%s", mode, uts.release, uptime);
	if (strcmp(mode, "check"))
		fail("unknown lull_init=%s (check or idle)", mode);
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
