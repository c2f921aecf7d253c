// SPDX-License-Identifier: MIT
/* The vCPU's latency histogram. */
#include <criterion/criterion.h>

#include "vcpu/histogram.h"

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
