// SPDX-License-Identifier: MIT
/*
 * clock-drift: how far the guest clock (pvclock, scaled from
 * KVM_GET_TSC_KHZ) drifts from host CLOCK_MONOTONIC over a window.
 *
 * The guest computes time exactly as pvclock_delta_ns() does from its TSC,
 * which is the host TSC plus a constant offset on this host (no TSC
 * scaling), so the drift is the difference between that formula applied
 * to a host TSC delta and the host's own clock over the same interval.
 * lull re-anchors the record every PVCLOCK_RESYNC_NS, which bounds what a
 * guest can ever see to drift_rate * that interval.
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <x86intrin.h>

#include "timers/clock.h"
#include "vcpu/pvclock.h"

static int tsc_khz(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC), vm, vcpu, khz;

	if (kvm < 0)
		return -1;
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	vcpu = vm < 0 ? -1 : ioctl(vm, KVM_CREATE_VCPU, 0);
	khz = vcpu < 0 ? -1 : ioctl(vcpu, KVM_GET_TSC_KHZ, 0);
	close(vcpu);
	close(vm);
	close(kvm);
	return khz;
}

/* A (tsc, ns) pair read as close together as we can. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t t0 = __rdtsc(), now = clock_now_ns(), t1 = __rdtsc();

	*tsc = t0 + (t1 - t0) / 2;
	*ns = now;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10.0;
	uint64_t tsc0, ns0, tsc1, ns1, guest_ns, host_ns;
	int khz = tsc_khz();
	uint32_t mul;
	int8_t shift;
	double drift_ns, ppm;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		puts("usage: clock-drift [SECONDS]   (default 10)");
		return 0;
	}
	if (khz <= 0) {
		fprintf(stderr, "clock-drift: KVM_GET_TSC_KHZ unavailable (is /dev/kvm there?)\n");
		return 69;
	}
	pvclock_scale((uint64_t)khz * 1000, &mul, &shift);
	sample(&tsc0, &ns0);
	usleep((useconds_t)(seconds * 1e6));
	sample(&tsc1, &ns1);
	guest_ns = pvclock_delta_ns(tsc1 - tsc0, mul, shift);
	host_ns = ns1 - ns0;
	drift_ns = (double)guest_ns - (double)host_ns;
	ppm = drift_ns / (double)host_ns * 1e6;
	printf("tsc_khz %d  mul %u shift %d\n", khz, mul, shift);
	printf("window %.3f s: guest clock %+.0f ns vs host (%.3f ppm)\n",
	       host_ns / 1e9, drift_ns, ppm);
	printf("with lull's re-anchoring every %.1f s a guest sees at most %.0f ns of drift\n",
	       PVCLOCK_RESYNC_NS / 1e9, ppm < 0 ? -ppm * PVCLOCK_RESYNC_NS / 1e6 : ppm * PVCLOCK_RESYNC_NS / 1e6);
	return 0;
}
