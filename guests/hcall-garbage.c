// SPDX-License-Identifier: MIT
/*
 * hcall-garbage: pseudo-random hypercalls, to show the VMM survives them.
 *
 * count=N calls (default 10000), seed=S (default: from the TSC; printed),
 * interrupts off throughout. Ops are mostly valid numbers, sometimes out
 * of range (just past LULL_HC_MAX, 32-bit-truncation traps, random 64-bit);
 * arguments are drawn from slots, vectors, flags, times, pointers (aligned,
 * unaligned, outside RAM, huge) and plain noise. SET_SHARED_PAGE only ever
 * gets a page the guest owns or an invalid address, so the VMM never
 * writes over the guest's code. Every result must be >= 0 or one of
 * -EINVAL -EFAULT -ENOSYS -ESRCH, and unknown ops must give -ENOSYS.
 * Afterwards every slot is stopped, the shared page re-registered and NOP
 * must still answer.
 *   hcall-garbage: PASS calls=N ok=.. einval=.. efault=.. enosys=.. esrch=.. seed=S
 */
#include "guest.h"
#include "rand.h"

static uint8_t scratch[4096] __attribute__((aligned(4096)));

struct tally {
	uint64_t ok, einval, efault, enosys, esrch, bad;
};

static uint64_t ram_end(void)
{
	return rt_boot.ram_end ? rt_boot.ram_end : 64ull << 20;
}

static uint64_t pick_op(struct rand *r)
{
	switch (rand_below(r, 10)) {
	case 0:
		return LULL_HC_MAX + 1 + rand_below(r, 16);
	case 1:
		/* a valid op in the low half: catches a VMM reading only eax */
		return (rand_u64(r) << 32) | rand_below(r, LULL_HC_MAX + 1);
	case 2:
		return rand_u64(r);
	default:
		return rand_below(r, LULL_HC_MAX + 1);
	}
}

static uint64_t pick_arg(struct rand *r, uint64_t now)
{
	switch (rand_below(r, 16)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return rand_below(r, 2 * (lull_info.nr_slots + 1)); /* slot-ish */
	case 3:
		return rand_below(r, 300); /* vector-ish */
	case 4:
		return rand_below(r, 8); /* flags-ish */
	case 5:
		return now + rand_below(r, 50000000); /* soon */
	case 6:
		return now - rand_below(r, now + 1); /* past */
	case 7:
		return rand_below(r, 2000000); /* period-ish */
	case 8:
		return rand_below(r, ram_end()); /* pointer into RAM */
	case 9:
		return ram_end() + rand_below(r, 1ull << 32); /* beyond RAM */
	case 10:
		return ~0ull;
	case 11:
		return 1ull << 63;
	case 12:
		return rand_below(r, smp_count() + 4); /* vcpu-ish */
	default:
		return rand_u64(r);
	}
}

/* SET_SHARED_PAGE only gets pages we own or addresses that must fail. */
static uint64_t pick_page(struct rand *r)
{
	uint64_t own = (uintptr_t)shared_page();

	switch (rand_below(r, 7)) {
	case 0:
		return own;
	case 1:
		return (uintptr_t)scratch;
	case 2:
		return own + 1 + rand_below(r, 4095); /* unaligned */
	case 3:
		return ram_end(); /* first page outside RAM */
	case 4:
		return (ram_end() + (rand_u64(r) & ~0xfffull)) | (1ull << 40);
	case 5:
		return ~0xfffull; /* huge, aligned */
	default:
		return rand_u64(r) | (1ull << 63);
	}
}

static void classify(struct tally *t, uint64_t op, long r, uint64_t n)
{
	if (op > LULL_HC_MAX && r != -LULL_ENOSYS) {
		if (t->bad++ < 10)
			printf("hcall-garbage: call %lu: unknown op %#lx returned %ld, want -ENOSYS\n",
			       n, op, r);
		return;
	}
	if (r >= 0)
		t->ok++;
	else if (r == -LULL_EINVAL)
		t->einval++;
	else if (r == -LULL_EFAULT)
		t->efault++;
	else if (r == -LULL_ENOSYS)
		t->enosys++;
	else if (r == -LULL_ESRCH)
		t->esrch++;
	else if (t->bad++ < 10)
		printf("hcall-garbage: call %lu: op %#lx returned %ld\n", n, op,
		       r);
}

int guest_main(void)
{
	uint64_t count = cmdline_u64("count", 10000);
	uint64_t seed = cmdline_u64("seed", rdtsc_ordered());
	uint64_t now = clock_ns();
	struct tally t = { 0 };
	struct rand r;
	long nop;

	if (rt_boot.hv != HV_LULL) {
		printf("hcall-garbage: SKIP needs lull's hypercalls (hv %s)\n",
		       hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	rand_seed(&r, seed);
	printf("hcall-garbage: %lu calls, seed=%lu, ram_end=%#lx, slots=%u\n",
	       count, seed, ram_end(), lull_info.nr_slots);

	cli();
	for (uint64_t n = 0; n < count; n++) {
		uint64_t op = pick_op(&r), a[6];

		for (int i = 0; i < 6; i++)
			a[i] = pick_arg(&r, now);
		if ((uint32_t)op == LULL_HC_SET_SHARED_PAGE)
			a[0] = pick_page(&r);
		classify(&t, op,
			 lull_hcall(op, a[0], a[1], a[2], a[3], a[4], a[5]), n);
	}

	/* Leave nothing armed; take our clock back. */
	for (uint32_t s = 0; s < lull_info.nr_slots; s++)
		lull_timer_stop(s);
	lull_xen_stop_singleshot();
	lull_xen_stop_periodic();
	if (lull_set_shared_page((uintptr_t)shared_page()) != 0) {
		printf("hcall-garbage: FAIL cannot re-register the shared page\n");
		return 1;
	}
	nop = lull_nop();
	printf("hcall-garbage: ok=%lu einval=%lu efault=%lu enosys=%lu esrch=%lu bad=%lu\n",
	       t.ok, t.einval, t.efault, t.enosys, t.esrch, t.bad);
	if (nop != LULL_ABI_VERSION) {
		printf("hcall-garbage: FAIL NOP returned %ld afterwards\n", nop);
		return 1;
	}
	if (t.bad) {
		printf("hcall-garbage: FAIL %lu unexpected results (seed=%lu)\n",
		       t.bad, seed);
		return 1;
	}
	printf("hcall-garbage: PASS calls=%lu ok=%lu einval=%lu efault=%lu enosys=%lu esrch=%lu seed=%lu\n",
	       count, t.ok, t.einval, t.efault, t.enosys, t.esrch, seed);
	return 0;
}
