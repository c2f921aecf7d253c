// SPDX-License-Identifier: MIT
/*
 * wheel-bench: the timer wheel against a binary min-heap, side by side in
 * one process (this machine is shared and noisy: only ratios measured
 * together mean much). For each N, half of the timers deferrable, expiries
 * uniform over ~1.07 s, it reports the median over --reps repetitions of
 * the ns per operation. See --help and docs/timers.md.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "timers/wheel.h"
#include "workload.h"

#define CACHED_QUERIES 1000000
#define MAX_N 16
#define DEFAULT_REPS 7

enum op {
	OP_ADD,
	OP_DEL,
	OP_MOD_SAME,
	OP_MOD_FAR,
	OP_NEXT_HARD_CACHED,
	OP_NEXT_HARD_RECOMPUTE,
	OP_EXPIRE,
	NR_OPS,
};

static const char *const op_name[NR_OPS] = {
	"add",
	"del",
	"mod_same",
	"mod_far",
	"next_hard_cached",
	"next_hard_recompute",
	"expire",
};

struct sample {
	double wheel[NR_OPS], heap[NR_OPS];
};

struct workload {
	size_t n;
	uint64_t *expires, *same_tick, *far;
	size_t *shuffled; /* the order del/mod visit timers (see --order) */
	bool random_order; /* else shuffled[i] == i: see visit() */
	size_t *hard_in_order; /* the hard timers, earliest expiry first */
	size_t nr_hard;
	struct wheel *w;
	struct wheel_timer *wt;
	struct heap_timers heap;
	struct heap_timer *ht;
};

static volatile uint64_t sink; /* keeps query results alive */

/*
 * This machine's vCPUs run at very different speeds from one minute to the
 * next (the host steals time and throttles): a chain of dependent adds,
 * one cycle each, gives the clock the benchmark actually got, so figures
 * from different runs can be compared as cycles (ns * GHz).
 */
static double clock_ghz(void)
{
	const uint64_t adds = 20000000;
	uint64_t x = 0, t0 = 0, i;

	for (int pass = 0; pass < 2; pass++) { /* the first one warms up */
		t0 = bench_now_ns();
		for (i = 0; i < adds; i++) {
			x += 1;
			__asm__ volatile("" : "+r"(x));
		}
	}
	sink = x;
	return (double)adds / (double)(bench_now_ns() - t0);
}

/*
 * The core raises its clock only after some time busy: without this, the
 * first N runs at a lower clock than the later ones. Spin until two clock
 * readings agree within 3% (at most ~1 s).
 */
static void warm_up(void)
{
	double last = clock_ghz(), now;

	for (int i = 0; i < 100; i++, last = now) {
		now = clock_ghz();
		if (now < last * 1.03 && now > last * 0.97 && i >= 10)
			break;
	}
}

static uint64_t rng_state = BENCH_SEED;

static void on_wheel_expiry(struct wheel_timer *t, uint64_t now)
{
	(void)t;
	(void)now;
}

static void on_heap_expiry(struct heap_timer *t, uint64_t now)
{
	(void)t;
	(void)now;
}

static void workload_init(struct workload *wl, size_t n, bool random_order)
{
	size_t i;

	wl->n = n;
	wl->random_order = random_order;
	wl->expires = bench_xcalloc(n, sizeof(uint64_t));
	wl->same_tick = bench_xcalloc(n, sizeof(uint64_t));
	wl->far = bench_xcalloc(n, sizeof(uint64_t));
	wl->shuffled = bench_xcalloc(n, sizeof(size_t));
	wl->hard_in_order = bench_xcalloc(n, sizeof(size_t));
	wl->w = bench_xcalloc(1, sizeof(*wl->w));
	wl->wt = bench_xcalloc(n, sizeof(*wl->wt));
	wl->ht = bench_xcalloc(n, sizeof(*wl->ht));
	if (heap_timers_init(&wl->heap, n)) {
		fprintf(stderr, "wheel-bench: out of memory\n");
		exit(1);
	}

	wl->nr_hard = 0;
	for (i = 0; i < n; i++) {
		bool deferrable = i & 1;

		bench_expiries(&rng_state, &wl->expires[i], &wl->same_tick[i],
			       &wl->far[i]);
		wl->shuffled[i] = i;
		if (!deferrable)
			wl->hard_in_order[wl->nr_hard++] = i;
		wheel_timer_init(&wl->wt[i], on_wheel_expiry,
				 deferrable ? WHEEL_DEFERRABLE : 0);
		heap_timer_init(&wl->ht[i], on_heap_expiry, deferrable);
	}
	for (i = n - 1; random_order && i > 0; i--) {
		size_t j = bench_rand(&rng_state) % (i + 1),
		       swap = wl->shuffled[i];

		wl->shuffled[i] = wl->shuffled[j];
		wl->shuffled[j] = swap;
	}
	bench_sort_by_expiry(wl->hard_in_order, wl->nr_hard, wl->expires);
}

static void workload_free(struct workload *wl)
{
	free(wl->expires);
	free(wl->same_tick);
	free(wl->far);
	free(wl->shuffled);
	free(wl->hard_in_order);
	free(wl->w);
	free(wl->wt);
	free(wl->ht);
	heap_timers_free(&wl->heap);
}

static void wheel_fill(struct workload *wl)
{
	wheel_init(wl->w, START_NS, 0);
	for (size_t i = 0; i < wl->n; i++)
		wheel_add(wl->w, &wl->wt[i], wl->expires[i], 0);
}

static void heap_fill(struct workload *wl)
{
	for (size_t i = 0; i < wl->n; i++)
		heap_del(&wl->heap, &wl->ht[i]);
	for (size_t i = 0; i < wl->n; i++)
		heap_add(&wl->heap, &wl->ht[i], wl->expires[i]);
}

static void wheel_empty(struct workload *wl)
{
	for (size_t i = 0; i < wl->n; i++)
		wheel_del(wl->w, &wl->wt[i]);
}

static void heap_empty(struct workload *wl)
{
	for (size_t i = 0; i < wl->n; i++)
		heap_del(&wl->heap, &wl->ht[i]);
}

static double per(uint64_t ns, size_t ops)
{
	return (double)ns / (double)ops;
}

/*
 * Each wheel phase is its own non-inlined function so that a callgrind run
 * (bench/wheel/instr.sh) can read instructions per operation from the
 * phase's inclusive count: those are stable on a loaded machine, timings are
 * not.
 */
#define phase __attribute__((noinline)) static
#define hot_phase inline __attribute__((always_inline))

phase void wheel_phase_add(struct workload *wl)
{
	struct wheel *w = wl->w;
	struct wheel_timer *wt = wl->wt;
	const uint64_t *expires = wl->expires;

	for (size_t i = 0, n = wl->n; i < n; i++)
		wheel_add(w, &wt[i], expires[i], 0);
}

phase void wheel_phase_next_hard_cached(struct workload *wl)
{
	for (size_t i = 0; i < CACHED_QUERIES; i++)
		sink = wheel_next_hard_expiry(wl->w);
}

/*
 * The i-th timer del and mod visit. In arm order that is i itself: reading
 * it from the identity permutation would put a dependent load in front of
 * every operation, a good part of a modify's cost and the benchmark's, not
 * the wheel's or the heap's.
 */
static hot_phase size_t visit(const struct workload *wl, size_t i)
{
	return wl->random_order ? wl->shuffled[i] : i;
}

/* Modify every timer to the expiry @to[i], visiting them in --order. */
static hot_phase void wheel_mod_all(struct workload *wl, const uint64_t *to)
{
	struct wheel *w = wl->w;
	struct wheel_timer *wt = wl->wt;

	for (size_t i = 0, n = wl->n; i < n; i++) {
		size_t j = visit(wl, i);

		wheel_mod(w, &wt[j], to[j], 0);
	}
}

phase void wheel_phase_mod_same(struct workload *wl)
{
	wheel_mod_all(wl, wl->same_tick);
}

phase void wheel_phase_mod_far(struct workload *wl)
{
	wheel_mod_all(wl, wl->far);
}

/* Delete the timers @order[0..n), in that order. */
static hot_phase void wheel_del_all(struct workload *wl, const size_t *order,
				    size_t n)
{
	struct wheel *w = wl->w;
	struct wheel_timer *wt = wl->wt;

	for (size_t i = 0; i < n; i++)
		wheel_del(w, &wt[order[i]]);
}

phase void wheel_phase_del(struct workload *wl)
{
	struct wheel *w = wl->w;
	struct wheel_timer *wt = wl->wt;

	for (size_t i = 0, n = wl->n; i < n; i++)
		wheel_del(w, &wt[visit(wl, i)]);
}

phase void wheel_phase_del_earliest_query(struct workload *wl)
{
	struct wheel *w = wl->w;
	struct wheel_timer *wt = wl->wt;
	const size_t *order = wl->hard_in_order;

	for (size_t i = 0, n = wl->nr_hard; i < n; i++) {
		wheel_del(w, &wt[order[i]]);
		sink = wheel_next_hard_expiry(w);
	}
}

phase void wheel_phase_del_earliest(struct workload *wl)
{
	wheel_del_all(wl, wl->hard_in_order, wl->nr_hard);
}

phase void wheel_phase_expire(struct workload *wl)
{
	size_t n = wl->n, ran = 0;
	uint64_t step, at;

	step = bench_expire_step(n);
	for (at = START_NS + step; ran < n; at += step)
		ran += wheel_advance(wl->w, at);
}

static void measure_wheel(struct workload *wl, double *out)
{
	struct wheel *w = wl->w;
	size_t n = wl->n;
	uint64_t t0, a, b;

	wheel_init(w, START_NS, 0);
	t0 = bench_now_ns();
	wheel_phase_add(wl);
	out[OP_ADD] = per(bench_now_ns() - t0, n);

	sink = wheel_next_hard_expiry(w); /* fill the cache */
	t0 = bench_now_ns();
	wheel_phase_next_hard_cached(wl);
	out[OP_NEXT_HARD_CACHED] = per(bench_now_ns() - t0, CACHED_QUERIES);

	t0 = bench_now_ns();
	wheel_phase_mod_same(wl);
	out[OP_MOD_SAME] = per(bench_now_ns() - t0, n);

	t0 = bench_now_ns();
	wheel_phase_mod_far(wl);
	out[OP_MOD_FAR] = per(bench_now_ns() - t0, n);

	t0 = bench_now_ns();
	wheel_phase_del(wl);
	out[OP_DEL] = per(bench_now_ns() - t0, n);

	/* Recompute: (delete earliest hard + query) - (delete earliest hard). */
	wheel_fill(wl);
	sink = wheel_next_hard_expiry(w);
	t0 = bench_now_ns();
	wheel_phase_del_earliest_query(wl);
	a = bench_now_ns() - t0;
	wheel_empty(wl);
	wheel_fill(wl);
	sink = wheel_next_hard_expiry(w);
	t0 = bench_now_ns();
	wheel_phase_del_earliest(wl);
	b = bench_now_ns() - t0;
	out[OP_NEXT_HARD_RECOMPUTE] = a > b ? per(a - b, wl->nr_hard) : 0;
	wheel_empty(wl);

	wheel_fill(wl);
	t0 = bench_now_ns();
	wheel_phase_expire(wl);
	out[OP_EXPIRE] = per(bench_now_ns() - t0, n);
}

static void measure_heap(struct workload *wl, double *out)
{
	struct heap_timers *h = &wl->heap;
	struct heap_timer *ht = wl->ht;
	const uint64_t *expires = wl->expires, *same = wl->same_tick,
		       *far = wl->far;
	const size_t *hard = wl->hard_in_order;
	size_t n = wl->n, nr_hard = wl->nr_hard, i;
	uint64_t t0, a, b, step, at;
	unsigned ran = 0;

	heap_empty(wl);
	t0 = bench_now_ns();
	for (i = 0; i < n; i++)
		heap_add(h, &ht[i], expires[i]);
	out[OP_ADD] = per(bench_now_ns() - t0, n);

	t0 = bench_now_ns();
	for (i = 0; i < CACHED_QUERIES; i++)
		sink = heap_next_hard_expiry(h);
	out[OP_NEXT_HARD_CACHED] = per(bench_now_ns() - t0, CACHED_QUERIES);

	t0 = bench_now_ns();
	for (i = 0; i < n; i++) {
		size_t j = visit(wl, i);

		heap_add(h, &ht[j], same[j]);
	}
	out[OP_MOD_SAME] = per(bench_now_ns() - t0, n);

	t0 = bench_now_ns();
	for (i = 0; i < n; i++) {
		size_t j = visit(wl, i);

		heap_add(h, &ht[j], far[j]);
	}
	out[OP_MOD_FAR] = per(bench_now_ns() - t0, n);

	t0 = bench_now_ns();
	for (i = 0; i < n; i++)
		heap_del(h, &ht[visit(wl, i)]);
	out[OP_DEL] = per(bench_now_ns() - t0, n);

	heap_fill(wl);
	t0 = bench_now_ns();
	for (i = 0; i < nr_hard; i++) {
		heap_del(h, &ht[hard[i]]);
		sink = heap_next_hard_expiry(h);
	}
	a = bench_now_ns() - t0;
	heap_fill(wl);
	t0 = bench_now_ns();
	for (i = 0; i < nr_hard; i++)
		heap_del(h, &ht[hard[i]]);
	b = bench_now_ns() - t0;
	out[OP_NEXT_HARD_RECOMPUTE] = a > b ? per(a - b, nr_hard) : 0;

	heap_fill(wl);
	step = bench_expire_step(n);
	t0 = bench_now_ns();
	for (at = START_NS + step; ran < n; at += step)
		ran += heap_advance(h, at);
	out[OP_EXPIRE] = per(bench_now_ns() - t0, n);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wheel-bench [--json] [--n LIST] [--reps R] [--order O]\n"
		"\n"
		"Times the lull timer wheel and a binary min-heap on the same\n"
		"operations in one process and prints the median ns per operation\n"
		"over R repetitions (default %d), with the ratio heap/wheel.\n"
		"Half of the N timers are deferrable; expiries are uniform over\n"
		"~1.07 s; the wheel uses its default 1024 ns tick.\n"
		"\n"
		"  --n LIST   comma-separated timer counts (default\n"
		"             1000,10000,100000,1000000)\n"
		"  --reps R   repetitions per N (default %d)\n"
		"  --order O  the order del, mod_same and mod_far visit timers:\n"
		"             arm (default: the order they were added) or random\n"
		"  --json     print one JSON object: {\"rows\": [{\"n\", \"op\",\n"
		"             \"wheel_ns\", \"heap_ns\"}, ...]} (the clock lines go\n"
		"             to stderr)\n"
		"  --help     this text\n"
		"\n"
		"Operations: add, del, mod_same (another ns in the\n"
		"same tick), mod_far (%.2f s later), next_hard_cached (query with\n"
		"nothing changed), next_hard_recompute (query right after deleting\n"
		"the earliest hard timer, measured as the difference between\n"
		"delete+query and delete alone over all hard timers; clamped at 0),\n"
		"expire (advancing in steps of ~%d due timers until all ran, per\n"
		"timer run).\n"
		"\n"
		"It first spins until the CPU clock settles, then before and\n"
		"after each N it times a chain of dependent adds (one\n"
		"cycle each) and prints the clock the run got: this machine's speed\n"
		"varies from minute to minute. wheel_cyc is wheel_ns times that\n"
		"clock, comparable across runs.\n",
		DEFAULT_REPS, DEFAULT_REPS, FAR_NS / 1e9, TIMERS_PER_STEP);
}

static unsigned parse_n_list(const char *s, size_t *n)
{
	unsigned nr = 0;
	char *end;

	while (*s && nr < MAX_N) {
		unsigned long long v = strtoull(s, &end, 10);

		if (end == s || !v || (*end && *end != ',')) {
			fprintf(stderr, "wheel-bench: bad --n list at '%s'\n",
				s);
			exit(2);
		}
		n[nr++] = v;
		s = *end ? end + 1 : end;
	}
	return nr;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "n", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "order", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t n[MAX_N] = { 1000, 10000, 100000, 1000000 };
	double ghz[MAX_N][2];
	unsigned nr_n = 4, reps = DEFAULT_REPS, i, r, op;
	bool json = false, first = true, random_order = false;
	int c;

	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'n':
			nr_n = parse_n_list(optarg, n);
			break;
		case 'r':
			reps = strtoul(optarg, NULL, 10);
			if (!reps) {
				fprintf(stderr,
					"wheel-bench: --reps must be > 0\n");
				return 2;
			}
			break;
		case 'o':
			if (!strcmp(optarg, "random")) {
				random_order = true;
			} else if (strcmp(optarg, "arm")) {
				fprintf(stderr,
					"wheel-bench: --order arm|random\n");
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
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	warm_up();
	if (json)
		printf("{\"rows\": [");
	else
		printf("%9s  %-20s %10s %10s %11s %10s\n", "n", "op",
		       "wheel_ns", "heap_ns", "heap/wheel", "wheel_cyc");
	for (i = 0; i < nr_n; i++) {
		struct sample *s = bench_xcalloc(reps, sizeof(*s));
		struct workload wl;

		workload_init(&wl, n[i], random_order);
		ghz[i][0] = clock_ghz();
		for (r = 0; r < reps; r++) {
			measure_wheel(&wl, s[r].wheel);
			measure_heap(&wl, s[r].heap);
		}
		ghz[i][1] = clock_ghz();
		for (op = 0; op < NR_OPS; op++) {
			double wv[reps], hv[reps], wm, hm;

			for (r = 0; r < reps; r++) {
				wv[r] = s[r].wheel[op];
				hv[r] = s[r].heap[op];
			}
			wm = median(wv, reps);
			hm = median(hv, reps);
			if (json) {
				printf("%s{\"n\": %zu, \"op\": \"%s\", "
				       "\"wheel_ns\": %.2f, \"heap_ns\": %.2f}",
				       first ? "" : ", ", n[i], op_name[op], wm,
				       hm);
				first = false;
			} else {
				printf("%9zu  %-20s %10.2f %10.2f %11.2f %10.1f\n",
				       n[i], op_name[op], wm, hm,
				       wm > 0 ? hm / wm : 0,
				       wm * (ghz[i][0] + ghz[i][1]) / 2);
			}
		}
		/* With --json, stdout is exactly {"rows": [...]}: scripts parse it. */
		fprintf(json ? stderr : stdout,
			"%9zu  # clock: %.2f GHz before, %.2f GHz after "
			"(wheel_cyc = wheel_ns x their mean)\n",
			n[i], ghz[i][0], ghz[i][1]);
		fflush(stdout);
		workload_free(&wl);
		free(s);
	}
	if (json)
		printf("]}\n");
	return 0;
}
