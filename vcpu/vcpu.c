// SPDX-License-Identifier: MIT
/* vCPU setup, teardown and the cross-thread entry points (kick, post). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "timers/clock.h"
#include "vcpu/vcpu.h"

static void kick_handler(int sig)
{
	(void)sig; /* its only job is to make KVM_RUN return -EINTR */
}

int vcpu_signals_init(void)
{
	struct sigaction sa = { .sa_handler = kick_handler };
	sigset_t set;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIG_VCPU_KICK, &sa, NULL) < 0)
		return -errno;
	sigemptyset(&set);
	sigaddset(&set, SIG_VCPU_KICK);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int vcpu_init(struct vcpu *v, unsigned index, int kvm_fd, int vm_fd,
	      const struct vcpu_ops *ops, void *owner, const atomic_bool *stop,
	      uint64_t slop_ns, uint64_t now)
{
	int r;

	memset(v, 0, sizeof(*v));
	v->index = index;
	v->fd = -1;
	v->ops = ops;
	v->owner = owner;
	v->stop = stop;
	v->slop_ns = slop_ns;
	v->min_run_ns = VCPU_MIN_RUN_NS;
	v->kick_armed_at = UINT64_MAX;
	atomic_init(&v->state, VCPU_IN_VMM);
	atomic_init(&v->kick_pending, false);
	for (int i = 0; i < 4; i++)
		atomic_init(&v->posted[i], 0);
	for (unsigned i = 0; i < 4; i++)
		atomic_init(&v->posted_level[i], 0);
	atomic_init(&v->init_posted, false);
	atomic_init(&v->sipi_posted, -1);
	atomic_init(&v->nmi_posted, 0);
	wheel_init(&v->wheel, now, 0);
	apic_init(v, index == 0);
	lateness_init(&v->stats.late, VCPU_LATE_THRESHOLD_NS);
	vcpu_set_advance(v, true);
	v->idle.kick_fd = -1;

	if (vm_fd < 0)
		return 0;

	r = idle_init(&v->idle);
	if (r < 0)
		return r;
	v->fd = ioctl(vm_fd, KVM_CREATE_VCPU, (unsigned long)index);
	if (v->fd < 0)
		return -errno;
	v->created_raw_ns = clock_raw_ns();
	r = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (r < 0)
		return -errno;
	v->run_size = (size_t)r;
	v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->fd, 0);
	if (v->run == MAP_FAILED) {
		v->run = NULL;
		return -errno;
	}
	/* before anyone sets up a boot state: what a SIPI starts from */
	if (ioctl(v->fd, KVM_GET_SREGS, &v->reset_sregs) < 0)
		return -errno;
	r = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	v->sync_regs = r > 0 && (r & KVM_SYNC_X86_REGS);
	v->sync_events = r > 0 && (r & KVM_SYNC_X86_EVENTS);
	v->run->kvm_valid_regs = (v->sync_regs ? KVM_SYNC_X86_REGS : 0) |
				 (v->sync_events ? KVM_SYNC_X86_EVENTS : 0);
	return 0;
}

bool vcpu_hold_until(struct vcpu *v, uint64_t t)
{
	return advance_hold(
		&v->advance[v->halted ? VCPU_WAKE_HALTED : VCPU_WAKE_RUNNING],
		t);
}

void vcpu_set_advance(struct vcpu *v, bool on)
{
	for (unsigned p = 0; p < VCPU_WAKE_PATHS; p++)
		advance_init(&v->advance[p], on);
}

void vcpu_set_halt_poll(struct vcpu *v, uint64_t ns)
{
	v->halt_poll_ns = ns;
}

void vcpu_destroy(struct vcpu *v)
{
	if (v->kick_timer_made)
		timer_delete(v->kick_timer);
	if (v->run)
		munmap(v->run, v->run_size);
	if (v->fd >= 0)
		close(v->fd);
	idle_destroy(&v->idle);
	lateness_destroy(&v->stats.late);
	v->run = NULL;
	v->fd = -1;
}

void vcpu_set_lateness(struct vcpu *v, uint64_t threshold_ns, bool trace)
{
	v->stats.late.threshold_ns = threshold_ns;
	v->trace_late = trace;
}

/*
 * Makes the vCPU's thread come back to the VMM soon. The flag is stored
 * before the state is read, and the thread stores its state before it reads
 * the flag (both seq_cst), so one of the two always sees the other: either
 * the thread notices the flag before it sleeps or enters the guest, or we
 * see where it is and wake it there.
 */
void vcpu_kick(struct vcpu *v)
{
	atomic_store(&v->kick_pending, true);
	switch (atomic_load(&v->state)) {
	case VCPU_IDLE:
		idle_kick(&v->idle);
		break;
	case VCPU_IN_GUEST:
		/* IN_GUEST is only ever stored after self was set */
		pthread_kill(v->self, SIG_VCPU_KICK);
		break;
	default:
		break; /* it checks kick_pending before it leaves the VMM */
	}
}

void vcpu_post_vector(struct vcpu *v, uint8_t vector)
{
	vcpu_post_vector_trigger(v, vector, false);
}

/* The level bit goes first: take_posted() reads it after the vector. */
void vcpu_post_vector_trigger(struct vcpu *v, uint8_t vector, bool level)
{
	uint64_t bit = 1ull << (vector % 64);

	if (level)
		atomic_fetch_or(&v->posted_level[vector / 64], bit);
	atomic_fetch_or(&v->posted[vector / 64], bit);
	vcpu_kick(v);
}

void vcpu_post_init(struct vcpu *v)
{
	atomic_store(&v->init_posted, true);
	vcpu_kick(v);
}

void vcpu_post_sipi(struct vcpu *v, uint8_t vector)
{
	atomic_store(&v->sipi_posted, vector);
	vcpu_kick(v);
}

void vcpu_post_nmi(struct vcpu *v)
{
	atomic_fetch_add(&v->nmi_posted, 1);
	vcpu_kick(v);
}

bool vcpu_send_ipi(struct vcpu *from, struct vcpu *to,
		   const struct apic_ipi *ipi)
{
	if (ipi->shorthand == APIC_SH_OTHERS && to == from)
		return true;
	if (ipi->shorthand == APIC_SH_NONE && !apic_accepts(&to->apic, ipi))
		return true;
	switch (ipi->mode) {
	case APIC_DM_FIXED:
	case APIC_DM_LOWEST:
		vcpu_post_vector_trigger(to, ipi->vector, ipi->level);
		return true;
	case APIC_DM_NMI:
		vcpu_post_nmi(to);
		return true;
	case APIC_DM_INIT:
		vcpu_post_init(to);
		return true;
	case APIC_DM_SIPI:
		vcpu_post_sipi(to, ipi->vector);
		return true;
	default:
		return false;
	}
}

uint32_t vcpu_raise_timer(struct vcpu *v, uint8_t vector, uint32_t times,
			  bool accumulate, bool deferred, uint64_t expiry)
{
	struct apic *a = &v->apic;
	uint32_t merged;

	if (deferred)
		v->stats.timers_fired_deferred++;
	else
		v->stats.timers_fired_hard++;
	merged = apic_raise(a, vector, times, accumulate,
			    deferred ? APIC_SRC_DEFERRED : APIC_SRC_HARD, expiry);

	/* this expiry now times the delivery: follow it from here */
	if (!deferred && a->since[vector] == expiry &&
	    a->source[vector] == APIC_SRC_HARD)
		lateness_taken(&v->stats.late, vector, expiry);
	return merged;
}

/* Registers lull cannot read or write: the VM cannot go on correctly. */
static void regs_failed(struct vcpu *v, const char *ioctl_name)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "%s failed: %s", ioctl_name,
		 strerror(errno));
	v->ops->fatal(v, false, msg);
}

struct kvm_regs *vcpu_regs(struct vcpu *v)
{
	if (v->sync_regs)
		return &v->run->s.regs.regs;
	if (v->fd >= 0 && ioctl(v->fd, KVM_GET_REGS, &v->regs_cache) < 0) {
		/* not the previous exit's registers: zeros, and a stop */
		memset(&v->regs_cache, 0, sizeof(v->regs_cache));
		regs_failed(v, "KVM_GET_REGS");
	}
	return &v->regs_cache;
}

void vcpu_regs_changed(struct vcpu *v)
{
	if (v->sync_regs)
		v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	else if (v->fd >= 0 && ioctl(v->fd, KVM_SET_REGS, &v->regs_cache) < 0)
		regs_failed(v, "KVM_SET_REGS");
}
