// SPDX-License-Identifier: MIT
/* runner.c: see runner.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include "runner.h"

#define MAX_ARGS 64
/* scripts/qemu_ref.py's status where no -cpu model boots */
#define QEMU_REF_CANNOT_START 69

/*
 * Criterion names a skipped test only under --verbose, and then with every
 * other test too: a skip and its reason belong in every log, so that a
 * host that cannot run a test says which and why.
 */
ReportHook(POST_TEST)(struct criterion_test_stats *stats)
{
	if (stats->test_status == CR_STATUS_SKIPPED && stats->message &&
	    !stats->test->data->disabled)
		printf("[SKIP] %s::%s: %s\n", stats->test->category,
		       stats->test->name, stats->message);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static const char *env_or_die(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v)
		cr_assert_fail("%s is not set: run the suite with 'meson test'",
			       name);
	return v;
}

const char *lull_bin(void)
{
	return env_or_die("LULL_BIN");
}

/* One buffer per call site is enough: tests pass the result straight on. */
const char *guest(const char *name)
{
	static char paths[8][512];
	static unsigned next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s.elf", env_or_die("LULL_GUESTS"),
		 name);
	return p;
}

const char *kvm_unavailable(void)
{
	static char why[128];
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return NULL;
	}
	snprintf(why, sizeof(why), "needs /dev/kvm: cannot open it (%s)",
		 strerror(errno));
	return why;
}

const struct host_kvm *host_kvm(void)
{
	static struct host_kvm h;
	static bool known;
	struct run r;
	const char *line;

	if (known)
		return &h;
	run_lull(&r, 30.0, "info", NULL);
	cr_assert_eq(r.status, 0, "lull info: status %d\n%s", r.status, r.err);
	line = strstr(r.out, "kvm: ");
	cr_assert(line && sscanf(line, "kvm: %15s", h.module) == 1,
		  "lull info names no KVM:\n%s", r.out);
	h.hardware = strstr(r.out, "hardware virtualization: yes\n") != NULL;
	run_free(&r);
	known = true;
	return &h;
}

bool reference_wrong_here(const struct reference_wrong *table, size_t rows,
			  const char *name, size_t len)
{
	const char *kvm = host_kvm()->module;

	for (size_t i = 0; i < rows; i++)
		if (!strcmp(table[i].kvm, kvm))
			for (const char *const *c = table[i].cases; *c; c++)
				if (strlen(*c) == len && !strncmp(*c, name, len))
					return true;
	return false;
}

void require_hardware_kvm(const char *what)
{
	const struct host_kvm *h = host_kvm();

	if (!h->hardware)
		cr_skip_test("needs a KVM with hardware virtualization: this "
			     "host's is %s, whose instruction emulator %s",
			     h->module, what);
}

void require_guest(const char *name)
{
	const char *list = getenv("LULL_GUEST_NAMES");
	size_t len = strlen(name);

	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && !memcmp(p, name, len))
			return;
		p += n + (p[n] == ',');
	}
	cr_skip_test("guest '%s' is not built yet (not in guests/meson.build)",
		     name);
}

/* An anonymous file: created, unlinked, read back later with pread. */
static int capture_file(void)
{
	const char *dir = getenv("TMPDIR");
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/lull-test-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

int proc_spawn(struct proc *p, char *const argv[])
{
	sigset_t none;
	int in;

	p->out_fd = capture_file();
	p->err_fd = capture_file();
	if (p->out_fd < 0 || p->err_fd < 0)
		return -errno;
	p->started = now_s();
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		/* Die with the test; start with clean signal state. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		in = open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(p->out_fd, 1) < 0 ||
		    dup2(p->err_fd, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		dprintf(2, "runner: cannot execute %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	return 0;
}

static char *read_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	ssize_t n;

	cr_assert_not_null(buf);
	while ((n = pread(fd, buf + len, cap - len - 1, (off_t)len)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
	}
	buf[len] = '\0';
	return buf;
}

/*
 * lull's one line on a KVM that emulates ordinary guests (kvm_host.h) is
 * taken out of stderr into r->kvm_note: the tests that count stderr's
 * sentences count the guest's and lull's own, which are the same on
 * every KVM; test_cli_kvm.c checks the note itself.
 */
static void take_kvm_note(struct run *r)
{
	static const char note[] = "lull: note: /dev/kvm is ";
	char *at = strstr(r->err, note);
	size_t len;

	if (!at || (at != r->err && at[-1] != '\n'))
		return;
	len = strcspn(at, "\n");
	snprintf(r->kvm_note, sizeof(r->kvm_note), "%.*s", (int)len, at);
	len += at[len] == '\n';
	memmove(at, at + len, strlen(at + len) + 1);
}

void proc_wait(struct proc *p, double limit_s, struct run *r)
{
	int ws = 0;
	pid_t w;

	memset(r, 0, sizeof(*r));
	while ((w = waitpid(p->pid, &ws, WNOHANG)) == 0) {
		if (now_s() - p->started > limit_s) {
			kill(p->pid, SIGKILL);
			r->killed = true;
			w = waitpid(p->pid, &ws, 0);
			break;
		}
		sleep_ms(2);
	}
	r->seconds = now_s() - p->started;
	cr_assert_eq(w, p->pid, "waitpid: %s", strerror(errno));
	if (WIFEXITED(ws)) {
		r->status = WEXITSTATUS(ws);
	} else {
		r->signaled = true;
		r->status = 128 + WTERMSIG(ws);
	}
	r->out = read_fd(p->out_fd);
	r->err = read_fd(p->err_fd);
	take_kvm_note(r);
	close(p->out_fd);
	close(p->err_fd);
	p->pid = -1;
}

bool proc_wait_output(struct proc *p, const char *needle, double limit_s)
{
	double start = now_s();

	while (now_s() - start < limit_s) {
		char *out = read_fd(p->out_fd);
		bool found = strstr(out, needle) != NULL;
		siginfo_t si;

		free(out);
		if (found)
			return true;
		/* Peek (WNOWAIT): proc_wait still reaps it later. */
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)p->pid, &si,
			   WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == p->pid)
			return false; /* it ended without printing it */
		sleep_ms(5);
	}
	return false;
}

static int lull_argv(char **argv, char *const args[])
{
	int n = 0;

	argv[n++] = (char *)lull_bin();
	for (; args[n - 1] && n < MAX_ARGS - 1; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	cr_assert_lt(n, MAX_ARGS - 1, "too many arguments");
	return n;
}

static void collect(char **args, va_list ap)
{
	int n = 0;
	char *a;

	while ((a = va_arg(ap, char *)) && n < MAX_ARGS - 1)
		args[n++] = a;
	args[n] = NULL;
}

void run_lullv(struct run *r, double limit_s, char *const args[])
{
	char *argv[MAX_ARGS];
	struct proc p;
	int e;

	lull_argv(argv, args);
	e = proc_spawn(&p, argv);
	cr_assert_eq(e, 0, "cannot start %s: %s", argv[0], strerror(-e));
	proc_wait(&p, limit_s, r);
}

void run_lull(struct run *r, double limit_s, ...)
{
	char *args[MAX_ARGS];
	va_list ap;

	va_start(ap, limit_s);
	collect(args, ap);
	va_end(ap);
	run_lullv(r, limit_s, args);
}

void run_guest_in_qemu(struct run *r, const char *name, unsigned vcpus,
		       double limit_s)
{
	char python[512], qemu[512], script[512], smp[16];
	const char *root = env_or_die("LULL_SOURCE_ROOT");
	char *argv[] = { python, script, "--vcpus", smp, "--mem", "64M",
			 (char *)guest(name), NULL };
	const char *used;
	struct proc p;

	require_guest(name);
	if (!in_path("qemu-system-x86_64", qemu, sizeof(qemu)))
		cr_skip_test("needs qemu-system-x86_64, which is not installed");
	if (!in_path("python3", python, sizeof(python)))
		cr_skip_test("needs python3 for scripts/qemu_ref.py");
	snprintf(script, sizeof(script), "%s/scripts/qemu_ref.py", root);
	snprintf(smp, sizeof(smp), "%u", vcpus);
	cr_assert_eq(proc_spawn(&p, argv), 0);
	proc_wait(&p, limit_s, r);
	cr_assert_not(r->killed, "QEMU ran over %.0f s\nstdout:\n%s", limit_s,
		      r->out);
	used = strstr(r->err, "qemu-ref: ");
	if (r->status == QEMU_REF_CANNOT_START && used)
		cr_skip_test("the QEMU/KVM reference cannot start on this host: %.*s",
			     (int)strcspn(used, "\n"), used);
	cr_assert(used, "scripts/qemu_ref.py said nothing of its -cpu:\n%s",
		  r->err);
	cr_log_info("%.*s", (int)strcspn(used, "\n"), used);
}

int spawn_lull(struct proc *p, ...)
{
	char *args[MAX_ARGS], *argv[MAX_ARGS];
	va_list ap;

	va_start(ap, p);
	collect(args, ap);
	va_end(ap);
	lull_argv(argv, args);
	return proc_spawn(p, argv);
}

bool in_path(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy = strdup(path ? path : "/usr/bin:/bin"), *save, *dir;
	bool found = false;

	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", dir, prog);
		found = !access(out, X_OK);
	}
	free(copy);
	return found;
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (const char *p = s; *p; p++)
		if (*p == '\n' || !p[1])
			n++;
	return n;
}

unsigned count_lines_with(const char *s, const char *sub)
{
	unsigned n = 0;

	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) : strlen(s);
		char *line = strndup(s, len);

		if (strstr(line, sub))
			n++;
		free(line);
		s += len + (eol ? 1 : 0);
	}
	return n;
}

bool contains_ci(const char *s, const char *sub)
{
	return strcasestr(s, sub) != NULL;
}

void assert_sentence(const char *err, const char *const want[])
{
	const char *eol = strchr(err, '\n');
	char *first = strndup(err, eol ? (size_t)(eol - err) : strlen(err));

	cr_assert(strstr(err, "lull: "), "no 'lull: ' sentence in stderr:\n%s",
		  err);
	for (; *want; want++)
		cr_assert(contains_ci(err, *want),
			  "stderr does not mention '%s':\n%s", *want, err);
	cr_assert_gt(strlen(first), 10, "stderr:\n%s", err);
	free(first);
}

const char *find_json(const char *out)
{
	const char *p;

	if (*out == '{')
		return out;
	p = strstr(out, "\n{");
	return p ? p + 1 : NULL;
}

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	size_t cap = 4096, n = 0, got;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n < 2)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		return NULL;
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/*
 * The JSON extractor: walks the text, skipping values it does not need.
 * Enough JSON for lull's own output (objects, arrays, strings with
 * escapes, numbers, literals); anything malformed makes a lookup fail.
 */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *skip_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p && *p != '"'; p++)
		if (*p == '\\' && !*++p)
			return NULL;
	return *p == '"' ? p + 1 : NULL;
}

static const char *skip_value(const char *p, int depth);

/* p at '{' or '['; returns the position past the matching close. */
static const char *skip_container(const char *p, int depth)
{
	char close = *p == '{' ? '}' : ']';
	bool object = *p == '{';

	p = skip_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			p = skip_string(p);
			if (!p)
				return NULL;
			p = skip_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = skip_value(skip_ws(p), depth + 1);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = skip_ws(p);
	}
}

static const char *skip_value(const char *p, int depth)
{
	const char *start = p;

	if (depth > 32)
		return NULL;
	if (*p == '"')
		return skip_string(p);
	if (*p == '{' || *p == '[')
		return skip_container(p, depth);
	while (*p && !strchr(",}] \t\r\n", *p))
		p++;
	return p == start ? NULL : p;
}

/* The member named key (len bytes) of the object at p, or NULL. */
static const char *member(const char *p, const char *key, size_t len)
{
	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *name = p + 1, *end = skip_string(p);

		if (!end)
			return NULL;
		p = skip_ws(end);
		if (*p++ != ':')
			return NULL;
		p = skip_ws(p);
		if ((size_t)(end - 1 - name) == len && !memcmp(name, key, len))
			return p;
		p = skip_value(p, 0);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

/* Element idx of the array at p, or NULL. */
static const char *element(const char *p, unsigned long idx)
{
	if (*p != '[')
		return NULL;
	p = skip_ws(p + 1);
	if (*p == ']')
		return NULL;
	for (unsigned long i = 0; i < idx; i++) {
		p = skip_value(p, 0);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return p;
}

static const char *lookup(const char *json, const char *path)
{
	const char *p = skip_ws(json);

	while (p && *path) {
		if (*path == '[') {
			char *end;
			unsigned long idx = strtoul(path + 1, &end, 10);

			if (end == path + 1 || *end != ']')
				return NULL;
			p = element(p, idx);
			path = end + 1;
		} else {
			size_t len = strcspn(path, ".[");

			p = member(p, path, len);
			path += len;
		}
		if (*path == '.')
			path++;
	}
	return p;
}

bool stats_has(const char *json, const char *path)
{
	return json && lookup(json, path) != NULL;
}

bool stats_u64(const char *json, const char *path, uint64_t *out)
{
	const char *p = json ? lookup(json, path) : NULL;
	char *end;

	if (!p || !isdigit((unsigned char)*p))
		return false;
	errno = 0;
	*out = strtoull(p, &end, 10);
	return !errno && (!*end || strchr(",}] \t\r\n", *end));
}

int stats_len(const char *json, const char *path)
{
	const char *p = json ? lookup(json, path) : NULL;
	int n = 0;

	if (!p || *p != '[')
		return -1;
	p = skip_ws(p + 1);
	if (*p == ']')
		return 0;
	for (;;) {
		p = skip_value(p, 0);
		if (!p)
			return -1;
		n++;
		p = skip_ws(p);
		if (*p == ']')
			return n;
		if (*p != ',')
			return -1;
		p = skip_ws(p + 1);
	}
}

uint64_t vcpu_stat(const char *json, unsigned vcpu, const char *field)
{
	char path[64];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "vcpus[%u].%s", vcpu, field);
	cr_assert(stats_u64(json, path, &v), "%s missing:\n%s", path, json);
	return v;
}

void check_guest(const char *name, const char *vcpus, const char *mode,
		 const char *cmdline, double limit_s)
{
	char pass[64];
	struct run r;

	require_guest(name);
	run_lull(&r, limit_s, "run", "--vcpus", vcpus, "--timer-mode", mode,
		 "--cmdline", cmdline, guest(name), NULL);

	cr_assert_not(r.killed, "%s ran over %.0f s", name, limit_s);
	cr_assert_eq(
		r.status, 0,
		"%s --vcpus %s --timer-mode %s --cmdline '%s': status %d\nstdout:\n%s\nstderr:\n%s",
		name, vcpus, mode, cmdline, r.status, r.out, r.err);
	snprintf(pass, sizeof(pass), "%s: PASS", name);
	cr_assert(strstr(r.out, pass), "no '%s' line:\n%s", pass, r.out);
	cr_assert_null(strstr(r.out, "FAIL"), "stdout:\n%s", r.out);
	run_free(&r);
}
