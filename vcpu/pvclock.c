// SPDX-License-Identifier: MIT
#include <errno.h>
#include <linux/kvm.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <x86intrin.h>

#include "timers/clock.h"
#include "vcpu/pvclock.h"

#define MSR_IA32_TSC 0x10

void pvclock_scale_ratio(uint64_t ns, uint64_t ticks, uint32_t *mul,
			 int8_t *shift)
{
	int s = 0;
	unsigned __int128 m;

	/* Pick the shift that puts mul in [2^31, 2^32): most bits of precision. */
	for (;;) {
		if (s >= 0)
			m = ((unsigned __int128)ns << 32) >> s;
		else
			m = ((unsigned __int128)ns << 32) << -s;
		m /= ticks;
		if (m >= (1ull << 32))
			s++;
		else if (m < (1ull << 31) && s > -31)
			s--;
		else
			break;
	}
	*mul = (uint32_t)m;
	*shift = (int8_t)s;
}

void pvclock_scale(uint64_t tsc_hz, uint32_t *mul, int8_t *shift)
{
	pvclock_scale_ratio(1000000000ull, tsc_hz, mul, shift);
}

uint64_t pvclock_delta_ns(uint64_t tsc_delta, uint32_t mul, int8_t shift)
{
	if (shift >= 0)
		tsc_delta <<= shift;
	else
		tsc_delta >>= -shift;
	return (uint64_t)(((unsigned __int128)tsc_delta * mul) >> 32);
}

/*
 * The guest TSC is the host TSC plus a per-vCPU offset (lull does not ask
 * for TSC scaling, so the rates are equal). KVM reports the offset directly
 * where it supports KVM_VCPU_TSC_OFFSET; otherwise we read the guest's
 * IA32_TSC between two host reads and take the midpoint.
 */
static int read_guest_tsc(int vcpu_fd, uint64_t *tsc)
{
	/* struct kvm_msrs ends in a flexible array: room for one entry */
	union {
		struct kvm_msrs head;
		uint8_t bytes[sizeof(struct kvm_msrs) +
			      sizeof(struct kvm_msr_entry)];
	} msrs = { .head.nmsrs = 1 };

	msrs.head.entries[0].index = MSR_IA32_TSC;
	if (ioctl(vcpu_fd, KVM_GET_MSRS, &msrs.head) != 1)
		return -EIO;
	*tsc = msrs.head.entries[0].data;
	return 0;
}

static int measure_offset(int vcpu_fd, int64_t *offset)
{
	struct kvm_device_attr attr = {
		.group = KVM_VCPU_TSC_CTRL,
		.attr = KVM_VCPU_TSC_OFFSET,
		.addr = (uint64_t)(uintptr_t)offset,
	};
	uint64_t before, after, guest;

	if (ioctl(vcpu_fd, KVM_GET_DEVICE_ATTR, &attr) == 0)
		return 0;
	before = __rdtsc();
	if (read_guest_tsc(vcpu_fd, &guest) < 0)
		return -EIO;
	after = __rdtsc();
	*offset = (int64_t)(guest - (before + (after - before) / 2));
	return 0;
}

void pvclock_start(struct pvclock_src *src, uint32_t tsc_khz,
		   uint64_t tsc_zero_raw_ns)
{
	src->tsc_khz = tsc_khz;
	src->tsc_zero_raw_ns = tsc_zero_raw_ns;
	pvclock_scale((uint64_t)tsc_khz * 1000, &src->mul, &src->shift);
	src->rate_mul = src->mul;
	src->rate_shift = src->shift;
	src->rate_measured = false;
	src->anchored = false;
	src->ready = true;
}

int pvclock_init(struct pvclock_src *src, int vcpu_fd, uint32_t tsc_khz,
		 uint64_t tsc_zero_raw_ns)
{
	int r;

	if (!tsc_khz)
		return -ENODEV;
	r = measure_offset(vcpu_fd, &src->tsc_offset);
	if (r < 0)
		return r;
	pvclock_start(src, tsc_khz, tsc_zero_raw_ns);
	return 0;
}

/* TSC ticks in `ns` at tsc_khz. */
static uint64_t ticks_in(uint32_t tsc_khz, uint64_t ns)
{
	return (uint64_t)((unsigned __int128)ns * tsc_khz / 1000000u);
}

/*
 * Held, the TSC of a vCPU that has not run reads only how long KVM has had
 * it loaded in the ioctl that reads it, so across a sleep it does not
 * advance and may step back. A read can stall inside its ioctl on a busy
 * host and look like progress, so one trial of three that did not advance
 * decides; a TSC that runs advances by the sleep in every trial.
 */
bool pvclock_tsc_held(int vcpu_fd, uint32_t tsc_khz)
{
	const struct timespec pause = { .tv_nsec = 2000000 };

	for (int trial = 0; trial < 3; trial++) {
		uint64_t before, after, t0, t1;

		if (read_guest_tsc(vcpu_fd, &before) < 0)
			return false;
		t0 = clock_now_ns();
		nanosleep(&pause, NULL);
		t1 = clock_now_ns();
		if (read_guest_tsc(vcpu_fd, &after) < 0)
			return false;
		if ((int64_t)(after - before) <
		    (int64_t)(ticks_in(tsc_khz, t1 - t0) / 2))
			return true;
	}
	return false;
}

/*
 * Two reads of one clock this far apart or closer bracket a read of
 * another (RAW between two of MONOTONIC, MONOTONIC between two of the TSC)
 * well enough; wider, the thread was likely preempted between them and the
 * three are read again. One preemption of a millisecond in a resync would
 * be a part in a thousand of the rate measured.
 */
#define CLOCK_BRACKET_NS 20000u
#define CLOCK_BRACKET_TRIES 4

/*
 * KVM's line for a held TSC (pvclock.h) at host CLOCK_MONOTONIC time
 * *now, which this reads. KVM counts the line on CLOCK_MONOTONIC_RAW,
 * which parts from CLOCK_MONOTONIC where NTP slews the host's clock, so
 * RAW is read too, between two reads of MONOTONIC, and RAW at the first
 * of them is taken to be what RAW read less the time between the two
 * (times 9/8, for a slew of up to the 10% NTP allows): never more than it
 * was, so the line errs below KVM's.
 */
static uint64_t kvm_line(const struct pvclock_src *src, uint64_t *now)
{
	uint64_t before, raw, after, gap;

	for (int try = 1;; try++) {
		before = clock_now_ns();
		raw = clock_raw_ns();
		after = clock_now_ns();
		if (after - before <= CLOCK_BRACKET_NS ||
		    try == CLOCK_BRACKET_TRIES)
			break;
	}
	*now = before;
	gap = (after - before) + ((after - before) >> 3);
	if (raw < sat_add(src->tsc_zero_raw_ns, gap))
		return 0;
	return ticks_in(src->tsc_khz, raw - gap - src->tsc_zero_raw_ns);
}

/* The least TSC a held vCPU can read at its next entry, as of *now (read
 * here), and KVM's line (as lull approximates it) in *line. */
static uint64_t held_tsc_floor(const struct pvclock_src *src, int vcpu_fd,
			       uint64_t *now, uint64_t *line)
{
	uint64_t held;

	*line = kvm_line(src, now);
	/* KVM scales ns to ticks with a 32-bit multiplier: stay below it */
	*line -= *line >> 28;
	if (vcpu_fd >= 0 && read_guest_tsc(vcpu_fd, &held) == 0 && held > *line)
		return held;
	return *line;
}

uint64_t pvclock_tsc_to_ns(const struct pvclock_src *src, int vcpu_fd,
			   uint64_t tsc, bool stays_out)
{
	/* keeps delta << shift in 64 bits; still years at any TSC rate */
	uint64_t cap = 1ull << (src->shift > 0 ? 62 - src->shift : 62);
	uint64_t current, delta, now, line;

	if (!src->ready)
		return 0;
	if (src->tsc_held) {
		current = held_tsc_floor(src, vcpu_fd, &now, &line);
		/*
		 * Held, the TSC of a vCPU that stays out stands still until
		 * the line passes it: it reaches `tsc` when the line does.
		 * (Counted from the held TSC instead, a halted vCPU would wake
		 * as early as the held TSC leads lull's line, find the
		 * deadline not yet reached, and sleep again: a host wakeup
		 * for nothing.)
		 */
		if (stays_out && tsc > current)
			current = line;
	} else {
		/* the host TSC before the clock: the guest's at `now` is
		 * no less */
		current = __rdtsc() + (uint64_t)src->tsc_offset;
		now = clock_now_ns();
	}
	if (tsc <= current)
		return 0;
	delta = tsc - current < cap ? tsc - current : cap;
	delta = pvclock_delta_ns(delta, src->mul, src->shift);
	/* mul is rounded down, by at most a part in 2^31: round up instead */
	delta += (delta >> 30) + 1;
	return sat_add(now, delta > LULL_HORIZON_NS ? LULL_HORIZON_NS : delta);
}

/* The guest TSC the vCPU reads at its next entry, at least, and the host
 * time *now that goes with it. */
static uint64_t read_anchor(const struct pvclock_src *src, uint64_t *now)
{
	uint64_t t0, t1;

	if (src->tsc_held)
		return kvm_line(src, now);
	/* host TSC read on both sides of the clock read: the midpoint, of
	 * reads close enough that no preemption came between them */
	for (int try = 1;; try++) {
		t0 = __rdtsc();
		*now = clock_now_ns();
		t1 = __rdtsc();
		if (t1 - t0 <= ticks_in(src->tsc_khz, CLOCK_BRACKET_NS) ||
		    try == CLOCK_BRACKET_TRIES)
			break;
	}
	return t0 + (t1 - t0) / 2 + (uint64_t)src->tsc_offset;
}

/* What the record as last written reads at guest TSC `tsc`. */
static uint64_t record_ns(const struct pvclock_src *src, uint64_t tsc)
{
	if (tsc <= src->rec_tsc)
		return src->rec_ns;
	return src->rec_ns +
	       pvclock_delta_ns(tsc - src->rec_tsc, src->rec_mul, src->rec_shift);
}

/*
 * CLOCK_MONOTONIC's rate against the guest TSC since the last
 * measurement, as a scale of its own: a faster clock on a TSC whose
 * nominal multiplier is near 2^32 needs a multiplier over 2^32, so the
 * shift is the rate's, not the nominal one's. The last rate stands where
 * the interval is under half the first resync's (too short); the nominal
 * one where the clock ran more than an eighth off it (NTP makes at most a
 * tenth): a TSC that jumped, not a clock that was slewed.
 */
static void measure_rate(struct pvclock_src *src, uint64_t tsc, uint64_t now)
{
	uint64_t ticks = tsc - src->rate_tsc, ns = now - src->rate_ns, nominal;

	if (tsc <= src->rate_tsc || now < src->rate_ns ||
	    ns < PVCLOCK_FIRST_RESYNC_NS / 2)
		return;
	src->rate_tsc = tsc;
	src->rate_ns = now;
	src->rate_measured = true;
	nominal = pvclock_delta_ns(ticks, src->mul, src->shift);
	if (ns < nominal - nominal / 8 || ns > nominal + nominal / 8) {
		src->rate_mul = src->mul;
		src->rate_shift = src->shift;
	} else {
		pvclock_scale_ratio(ns, ticks, &src->rate_mul, &src->rate_shift);
	}
}

static void publish(struct pvclock_src *src, struct lull_pvclock *rec,
		    uint64_t tsc, uint64_t ns, uint32_t mul, int8_t shift)
{
	uint32_t version = rec->version;

	rec->version = version | 1;
	atomic_thread_fence(memory_order_release);
	rec->tsc_timestamp = tsc;
	rec->system_time = ns;
	rec->tsc_to_system_mul = mul;
	rec->tsc_shift = shift;
	/*
	 * Never LULL_PVCLOCK_TSC_STABLE, even where KVM calls the TSC stable:
	 * each vCPU's record is anchored and rated on its own, and sheds a
	 * lead by running slower than the host's clock, so neither readings
	 * on two vCPUs nor intervals against lull's timers are exact to the
	 * nanosecond, which is what the flag would let a guest assume.
	 */
	rec->flags = 0;
	atomic_thread_fence(memory_order_release);
	rec->version = (version | 1) + 1;
	src->rec_tsc = tsc;
	src->rec_ns = ns;
	src->rec_mul = mul;
	src->rec_shift = shift;
	src->anchored = true;
}

bool pvclock_rate_ppm(const struct pvclock_src *src, int64_t *ppm)
{
	uint64_t second = (uint64_t)src->tsc_khz * 1000;
	int64_t nominal, rate;

	if (!src->ready || !src->rate_measured)
		return false;
	nominal = (int64_t)pvclock_delta_ns(second, src->mul, src->shift);
	rate = (int64_t)pvclock_delta_ns(second, src->rate_mul, src->rate_shift);
	*ppm = (rate - nominal) * 1000000 / nominal;
	return true;
}

bool pvclock_resync_due(const struct pvclock_src *src, uint64_t now)
{
	uint64_t every = src->rate_measured ? PVCLOCK_RESYNC_NS :
					      PVCLOCK_FIRST_RESYNC_NS;

	return src->ready && now - src->last_sync_ns >= every;
}

/* A lead of the guest's clock is shed at most this fast (1/64). */
#define PVCLOCK_MAX_SLOWDOWN_SHIFT 6

void pvclock_write(struct pvclock_src *src, struct lull_pvclock *rec)
{
	uint64_t now, tsc = read_anchor(src, &now), ns = now, mul;
	int8_t shift;

	if (src->anchored) {
		measure_rate(src, tsc, now);
	} else {
		src->rate_tsc = tsc;
		src->rate_ns = now;
	}
	mul = src->rate_mul;
	shift = src->rate_shift;
	if (src->anchored) {
		uint64_t cont = record_ns(src, tsc);

		/*
		 * A part in 2^20 fast, so that the guest's clock leads by a
		 * few us against the slowdown below rather than lag by as
		 * many ns and be stepped at every timer.
		 */
		mul += mul >> 20;
		if (cont > now) {
			/* never back: run slower until the host catches up */
			uint64_t lead = cont - now, most = PVCLOCK_RESYNC_NS >>
						  PVCLOCK_MAX_SLOWDOWN_SHIFT;

			ns = cont;
			mul -= mul * (lead < most ? lead : most) / PVCLOCK_RESYNC_NS;
		}
	}
	/* a rate's mul is under 2^32, and a part in 2^20 more is under 2^33 */
	if (mul >= 1ull << 32) {
		mul >>= 1;
		shift++;
	}
	publish(src, rec, tsc, ns, (uint32_t)mul, shift);
	src->last_sync_ns = now;
}

void pvclock_catch_up(struct pvclock_src *src, struct lull_pvclock *rec)
{
	uint64_t now, tsc;

	if (!src->anchored)
		return;
	tsc = read_anchor(src, &now);
	if (record_ns(src, tsc) >= now)
		return;
	publish(src, rec, tsc, now, src->rec_mul, src->rec_shift);
	src->steps++;
}
