// SPDX-License-Identifier: MIT
/* The vCPU's interrupt queue and latency histogram: pure data structures. */
#include <criterion/criterion.h>

#include "histogram.h"
#include "irq.h"

Test(irq, highest_vector_first)
{
	struct irq_queue q = { 0 };

	irq_raise(&q, 40, 1, false, IRQ_SRC_HARD, 1);
	irq_raise(&q, 200, 1, false, IRQ_SRC_IPI, 0);
	irq_raise(&q, 63, 1, false, IRQ_SRC_DEFERRED, 2);
	irq_raise(&q, 64, 1, false, IRQ_SRC_DEFERRED, 2);
	cr_assert_eq(irq_highest(&q), 200);
	irq_consume(&q, 200);
	cr_assert_eq(irq_highest(&q), 64);
	irq_consume(&q, 64);
	cr_assert_eq(irq_highest(&q), 63);
	irq_consume(&q, 63);
	cr_assert_eq(irq_highest(&q), 40);
	irq_consume(&q, 40);
	cr_assert_eq(irq_highest(&q), -1);
	cr_assert_not(irq_any_pending(&q));
}

Test(irq, an_edge_on_a_pending_vector_merges)
{
	struct irq_queue q = { 0 };

	cr_assert_eq(irq_raise(&q, 50, 1, false, IRQ_SRC_HARD, 10), 0);
	cr_assert_eq(irq_raise(&q, 50, 1, false, IRQ_SRC_HARD, 20), 1);
	cr_assert_eq(q.since[50], 10, "lateness counts from the oldest raise");
	irq_consume(&q, 50);
	cr_assert_not(irq_any_pending(&q));
}

Test(irq, accumulated_raises_are_each_delivered_up_to_the_cap)
{
	struct irq_queue q = { 0 };
	unsigned delivered = 0;

	cr_assert_eq(irq_raise(&q, 50, 3, true, IRQ_SRC_HARD, 10), 0);
	cr_assert_eq(irq_raise(&q, 50, 1, true, IRQ_SRC_HARD, 20), 0);
	cr_assert_eq(irq_raise(&q, 50, IRQ_MAX_OWED, true, IRQ_SRC_HARD, 30), 4,
		     "beyond the cap, raises are dropped and reported");
	while (irq_highest(&q) == 50) {
		irq_consume(&q, 50);
		delivered++;
	}
	cr_assert_eq(delivered, IRQ_MAX_OWED);
}

Test(irq, consuming_an_idle_vector_is_harmless)
{
	struct irq_queue q = { 0 };

	irq_consume(&q, 99);
	cr_assert_eq(irq_highest(&q), -1);
}

Test(histogram, quantiles_within_a_sixteenth_and_exact_max)
{
	static struct histogram h;

	for (uint64_t v = 1; v <= 10000; v++)
		hist_record(&h, v * 1000);
	cr_assert_eq(h.count, 10000);
	cr_assert_eq(h.max, 10000000);
	uint64_t p50 = hist_quantile(&h, 0.5), p99 = hist_quantile(&h, 0.99);

	cr_assert(p50 >= 5000000 && p50 <= 5000000 + 5000000 / 16, "p50 %lu", p50);
	cr_assert(p99 >= 9900000 && p99 <= 9900000 + 9900000 / 16, "p99 %lu", p99);
	cr_assert_eq(hist_quantile(&h, 1.0), 10000000);
}

Test(histogram, empty_and_small_values)
{
	static struct histogram h;

	cr_assert_eq(hist_quantile(&h, 0.5), 0);
	hist_record(&h, 0);
	hist_record(&h, 3);
	cr_assert_eq(hist_quantile(&h, 0.0), 0);
	cr_assert_eq(hist_quantile(&h, 1.0), 3);
	hist_record(&h, UINT64_MAX);
	cr_assert_eq(hist_quantile(&h, 1.0), UINT64_MAX);
}
