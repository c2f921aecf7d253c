// SPDX-License-Identifier: MIT
/*
 * wheel-ab: two builds of timers/ in one process, A and B alternated
 * round by round on the same timers in the same memory, and the ratio B/A
 * taken per round. On this machine the clock and the host's memory load
 * drift over seconds, so runs of two binaries minutes apart (ab.py) differ
 * by more than most changes do; a pair of runs a few milliseconds apart
 * sees the same machine, and the median of many paired ratios is what
 * separates a 5% change from the noise. bench/wheel/ab.sh builds the two
 * shared objects. Prints figures only; asserts nothing.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timers/wheel.h"
#include "workload.h" /* the timers of wheel-bench */

enum ab_op {
	AB_ADD,
	AB_DEL,
	AB_MOD_SAME,
	AB_MOD_FAR,
	AB_CACHED,
	AB_RECOMPUTE,
	AB_EXPIRE,
	AB_EXPIRE_NEAR,
	AB_NR_OPS
};
static const char *const ab_op_name[AB_NR_OPS] = {
	"add",
	"del",
	"mod_same",
	"mod_far",
	"next_hard_cached",
	"next_hard_recompute",
	"expire",
	"expire_near",
};

#define CACHED_QUERIES 100000
/*
 * A round repeats each phase until it has done about this many operations:
 * a phase of 100 timers takes less than a microsecond, about what an
 * interrupt or a clock read costs.
 */
#define OPS_PER_ROUND 10000
/*
 * expire_near: the same timers run by advances 100 us apart, about how
 * often a running vCPU's thread comes back to the wheel: short advances
 * over levels 0 and 1, most running nothing or one timer.
 */
#define NEAR_STEP_NS 100000

/* The entry points, looked up in each build. */
struct build {
	const char *path;
	void (*init)(struct wheel *, uint64_t, unsigned);
	void (*timer_init)(struct wheel_timer *, wheel_timer_fn, unsigned);
	int (*add)(struct wheel *, struct wheel_timer *, uint64_t, uint64_t);
	int (*mod)(struct wheel *, struct wheel_timer *, uint64_t, uint64_t);
	int (*del)(struct wheel *, struct wheel_timer *);
	uint64_t (*next_hard)(struct wheel *);
	unsigned (*advance)(struct wheel *, uint64_t);
};

struct workload {
	size_t n, nr_hard;
	uint64_t *expires, *same_tick, *far;
	size_t *hard_in_order;
	struct wheel *w;
	struct wheel_timer *wt;
};

static volatile uint64_t sink;

static void on_expiry(struct wheel_timer *t, uint64_t now)
{
	(void)t;
	sink += now;
}

static void *symbol(void *lib, const char *path, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "wheel-ab: %s: no symbol %s\n", path, name);
		exit(1);
	}
	return p;
}

static void build_load(struct build *b, const char *path)
{
	/* RTLD_LOCAL: A's and B's symbols of the same name stay apart. */
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "wheel-ab: %s\n", dlerror());
		exit(1);
	}
	b->path = path;
	b->init = symbol(lib, path, "wheel_init");
	b->timer_init = symbol(lib, path, "wheel_timer_init");
	b->add = symbol(lib, path, "wheel_add");
	b->mod = symbol(lib, path, "wheel_mod");
	b->del = symbol(lib, path, "wheel_del");
	b->next_hard = symbol(lib, path, "wheel_next_hard_expiry");
	b->advance = symbol(lib, path, "wheel_advance");
}

static void workload_init(struct workload *wl, size_t n)
{
	uint64_t rng_state = BENCH_SEED;

	wl->n = n;
	wl->nr_hard = 0;
	wl->expires = bench_xcalloc(n, sizeof(*wl->expires));
	wl->same_tick = bench_xcalloc(n, sizeof(*wl->same_tick));
	wl->far = bench_xcalloc(n, sizeof(*wl->far));
	wl->hard_in_order = bench_xcalloc(n, sizeof(*wl->hard_in_order));
	wl->w = bench_xcalloc(1, sizeof(*wl->w));
	wl->wt = bench_xcalloc(n, sizeof(*wl->wt));
	for (size_t i = 0; i < n; i++) {
		bench_expiries(&rng_state, &wl->expires[i], &wl->same_tick[i],
			       &wl->far[i]);
		if (!(i & 1)) /* the odd ones are deferrable */
			wl->hard_in_order[wl->nr_hard++] = i;
	}
	bench_sort_by_expiry(wl->hard_in_order, wl->nr_hard, wl->expires);
}

static void workload_free(struct workload *wl)
{
	free(wl->expires);
	free(wl->same_tick);
	free(wl->far);
	free(wl->hard_in_order);
	free(wl->w);
	free(wl->wt);
}

/* Arm every timer afresh; returns the ns it took. */
static uint64_t fill(const struct build *b, struct workload *wl)
{
	uint64_t t0;

	for (size_t i = 0; i < wl->n; i++)
		b->timer_init(&wl->wt[i], on_expiry,
			      i & 1 ? WHEEL_DEFERRABLE : 0);
	b->init(wl->w, START_NS, 0);
	t0 = bench_now_ns();
	for (size_t i = 0; i < wl->n; i++)
		b->add(wl->w, &wl->wt[i], wl->expires[i], 0);
	return bench_now_ns() - t0;
}

/* Delete the hard timers earliest first, with or without a query each. */
static uint64_t del_earliest(const struct build *b, struct workload *wl,
			     int query)
{
	uint64_t t0;

	fill(b, wl);
	sink = b->next_hard(wl->w);
	t0 = bench_now_ns();
	for (size_t i = 0; i < wl->nr_hard; i++) {
		b->del(wl->w, &wl->wt[wl->hard_in_order[i]]);
		if (query)
			sink = b->next_hard(wl->w);
	}
	return bench_now_ns() - t0;
}

/* Delete every timer, in arm order; returns the ns it took. */
static uint64_t del_all(const struct build *b, struct workload *wl)
{
	uint64_t t0 = bench_now_ns();

	for (size_t i = 0; i < wl->n; i++)
		b->del(wl->w, &wl->wt[i]);
	return bench_now_ns() - t0;
}

/* Modify every timer, in arm order, to @to[i]; returns the ns it took. */
static uint64_t modify(const struct build *b, struct workload *wl,
		       const uint64_t *to)
{
	uint64_t t0 = bench_now_ns();

	for (size_t i = 0; i < wl->n; i++)
		b->mod(wl->w, &wl->wt[i], to[i], 0);
	return bench_now_ns() - t0;
}

/* One pass of @b, @queries cached queries: ns for each ab_op, added to @ns. */
static void measure_pass(const struct build *b, struct workload *wl,
			 size_t queries, uint64_t *ns)
{
	size_t n = wl->n, ran = 0;
	uint64_t step = bench_expire_step(n), at, t0, with, without;

	with = del_earliest(b, wl, 1);
	without = del_earliest(b, wl, 0);
	ns[AB_RECOMPUTE] += with - without; /* may wrap: summed, then read */
	ns[AB_ADD] += fill(b, wl);

	sink = b->next_hard(wl->w); /* fill the cache */
	t0 = bench_now_ns();
	for (size_t i = 0; i < queries; i++)
		sink = b->next_hard(wl->w);
	ns[AB_CACHED] += bench_now_ns() - t0;

	ns[AB_MOD_SAME] += modify(b, wl, wl->same_tick);
	ns[AB_MOD_FAR] += modify(b, wl, wl->far);
	ns[AB_DEL] += del_all(b, wl);

	fill(b, wl);
	t0 = bench_now_ns();
	for (at = START_NS + step; ran < n; at += step)
		ran += b->advance(wl->w, at);
	ns[AB_EXPIRE] += bench_now_ns() - t0;
}

/* Run every timer by advances NEAR_STEP_NS apart; returns ns per advance. */
static double expire_near(const struct build *b, struct workload *wl)
{
	size_t ran = 0, advances = 0;
	uint64_t at, t0;

	fill(b, wl);
	t0 = bench_now_ns();
	for (at = START_NS + NEAR_STEP_NS; ran < wl->n; at += NEAR_STEP_NS) {
		ran += b->advance(wl->w, at);
		advances++;
	}
	return (double)(bench_now_ns() - t0) / (double)advances;
}

/* One round of @b: ns per op for each ab_op (per advance for expire_near). */
static void measure(const struct build *b, struct workload *wl, double *out)
{
	size_t n = wl->n, passes = (OPS_PER_ROUND + n - 1) / n;
	size_t queries = CACHED_QUERIES / passes;
	uint64_t ns[AB_NR_OPS] = { 0 };

	for (size_t p = 0; p < passes; p++)
		measure_pass(b, wl, queries, ns);
	for (int op = 0; op < AB_NR_OPS; op++)
		out[op] = (double)ns[op] / (double)(passes * n);
	out[AB_CACHED] = (double)ns[AB_CACHED] / (double)(passes * queries);
	out[AB_RECOMPUTE] = (int64_t)ns[AB_RECOMPUTE] > 0 ?
				    (double)ns[AB_RECOMPUTE] /
					    (double)(passes * wl->nr_hard) :
				    0;
	out[AB_EXPIRE_NEAR] = expire_near(b, wl);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @v in place; returns its q-quantile (0.5: the median). */
static double quantile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), by_value);
	return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static void run(const struct build *builds, size_t n, size_t rounds)
{
	struct workload wl;
	double *t[2][AB_NR_OPS], *ratio[AB_NR_OPS], out[AB_NR_OPS];

	workload_init(&wl, n);
	for (int op = 0; op < AB_NR_OPS; op++) {
		t[0][op] = bench_xcalloc(rounds, sizeof(double));
		t[1][op] = bench_xcalloc(rounds, sizeof(double));
		ratio[op] = bench_xcalloc(rounds, sizeof(double));
	}
	for (size_t r = 0; r < rounds; r++) {
		/* A B, B A, ...: neither build always runs second. */
		for (int k = 0; k < 2; k++) {
			int v = r & 1 ? 1 - k : k;

			measure(&builds[v], &wl, out);
			for (int op = 0; op < AB_NR_OPS; op++)
				t[v][op][r] = out[op];
		}
		for (int op = 0; op < AB_NR_OPS; op++)
			ratio[op][r] =
				t[0][op][r] > 0 ? t[1][op][r] / t[0][op][r] : 1;
	}
	for (int op = 0; op < AB_NR_OPS; op++) {
		double q1 = quantile(ratio[op], rounds, 0.25),
		       q3 = quantile(ratio[op], rounds, 0.75);

		printf("%9zu  %-20s %8.2f %8.2f %8.2f %8.2f %7.3f  %5.3f-%5.3f\n",
		       n, ab_op_name[op], quantile(t[0][op], rounds, 0),
		       quantile(t[1][op], rounds, 0),
		       quantile(t[0][op], rounds, 0.5),
		       quantile(t[1][op], rounds, 0.5),
		       quantile(ratio[op], rounds, 0.5), q1, q3);
		free(t[0][op]);
		free(t[1][op]);
		free(ratio[op]);
	}
	workload_free(&wl);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wheel-ab [--n LIST] [--rounds R] A.so B.so\n"
		"\n"
		"Loads two builds of timers/ (bench/wheel/ab.sh makes them)\n"
		"and runs wheel-bench's add, del, mod_same, mod_far,\n"
		"next_hard_cached, next_hard_recompute and expire\n"
		"workloads with each (a phase is repeated until a round\n"
		"has done ~10^4 operations), and expire_near (the timers\n"
		"run by advances 100 us apart; ns per advance),\n"
		"alternated round by round (A B, B A, ...) on the same\n"
		"timers. Per (n, op) it prints the fastest\n"
		"and the median ns per op of A and of B, and the median of\n"
		"the per-round ratios B/A with its quartiles: below 1, B is\n"
		"faster. A build against itself gives the noise floor.\n"
		"\n"
		"  --n LIST    comma-separated timer counts (default\n"
		"              1000,10000,100000)\n"
		"  --rounds R  rounds per N (default 100)\n"
		"  --help      this text\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "n", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *n_list = "1000,10000,100000";
	struct build builds[2];
	long rounds = 100;
	char *list, *tok, *end;
	int c;

	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (c) {
		case 'n':
			n_list = optarg;
			break;
		case 'r':
			rounds = strtol(optarg, &end, 10);
			if (*end || rounds < 1 || rounds > 1000000) {
				fprintf(stderr,
					"wheel-ab: --rounds wants 1..1000000\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	build_load(&builds[0], argv[optind]);
	build_load(&builds[1], argv[optind + 1]);
	printf("A = %s\nB = %s\n", builds[0].path, builds[1].path);
	printf("%9s  %-20s %8s %8s %8s %8s %7s  %s\n", "n", "op", "min A",
	       "min B", "med A", "med B", "B/A", "quartiles");
	list = strdup(n_list);
	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		long n = strtol(tok, &end, 10);

		if (*end || n < TIMERS_PER_STEP || n > 10000000) {
			fprintf(stderr, "wheel-ab: bad N '%s' (16..10^7)\n",
				tok);
			free(list);
			return 2;
		}
		run(builds, (size_t)n, (size_t)rounds);
		fflush(stdout);
	}
	free(list);
	return 0;
}
