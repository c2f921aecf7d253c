/* SPDX-License-Identifier: MIT */
/*
 * One vCPU: its KVM fd and kvm_run page, its thread, its timer wheel, its
 * pending interrupts and its idle wait.
 *
 * The thread (vcpu_thread) loops: advance the wheel to now and run what is
 * due (hard and deferred alike), inject, enter the guest, dispatch the exit.
 * A HLT exit sleeps in idle_sleep() until the next *hard* expiry plus the
 * slop, or a kick. While the guest runs, a per-thread POSIX timer kicks it
 * out of KVM_RUN at the earliest expiry of either kind, because a busy vCPU
 * runs its deferrable timers on time.
 *
 * vcpu/ knows nothing of devices: port, MMIO and fatal exits go to the
 * vcpu_ops the VM installs. Any thread may call vcpu_kick() and
 * vcpu_post_vector(); everything else belongs to the vCPU's own thread.
 */
#ifndef LULL_VCPU_H
#define LULL_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lull_abi.h"
#include "timers/advance.h"
#include "timers/periodic.h"
#include "timers/wheel.h"
#include "vcpu/apic.h"
#include "vcpu/histogram.h"
#include "vcpu/idle.h"
#include "vcpu/lateness.h"

/* The kick signal: blocked everywhere except inside KVM_RUN. */
#define SIG_VCPU_KICK SIGUSR1

/* A timer kick lets the guest run at least this long after each entry:
 * timers due sooner wait for it, so a storm of them cannot starve the
 * guest's own code (the ABI's period floor is the same 100 us). Where the
 * VMM's way back from a kick takes longer (a slow host, a storm's
 * catch-up), the run is twice that way, learned, up to the bound: the
 * guest keeps about two thirds of its thread's time, however slow. */
#define VCPU_MIN_RUN_NS 100000ull
#define VCPU_MAX_MIN_RUN_NS 2000000ull

/* A hard timer later than this has its lateness charged to causes
 * (lateness.h) unless vcpu_set_lateness says otherwise: well above the
 * slop and a host's usual wake latency, well below a stall. */
#define VCPU_LATE_THRESHOLD_NS 1000000
/* The longest halt poll (vcpu_set_halt_poll) lull takes. */
#define VCPU_MAX_HALT_POLL_NS 1000000ull

struct vcpu;

struct vcpu_ops {
	/* Port I/O; data is size * count bytes inside kvm_run. */
	void (*io)(struct vcpu *v, uint16_t port, bool out, unsigned size,
		   unsigned count, uint8_t *data);
	void (*mmio)(struct vcpu *v, uint64_t addr, bool write, unsigned len,
		     uint8_t *data);
	/* An MSR that is not the APIC's and that KVM would not handle:
	 * false makes the access a #GP. */
	bool (*msr)(struct vcpu *v, uint32_t index, bool write, uint64_t *data);
	/* An IPI from this vCPU's APIC to its destinations (the VM knows
	 * the other vCPUs; the self shorthand never gets here). */
	void (*ipi)(struct vcpu *v, const struct apic_ipi *ipi);
	/* The guest's EOI of `vector`, which this APIC accepted
	 * level-triggered (its TMR bit): for the I/O APIC's remote IRR. May
	 * be NULL. */
	void (*level_eoi)(struct vcpu *v, uint8_t vector);
	/* Host CLOCK_MONOTONIC ns by which this vCPU reads at least `tsc`;
	 * 0 if it would now (pvclock_tsc_to_ns). While `halted` it stays
	 * out until then, where KVM may hold its TSC still. */
	uint64_t (*tsc_to_ns)(struct vcpu *v, uint64_t tsc);
	/* Guest RAM at [gpa, gpa + len), or NULL where it is not all RAM. */
	void *(*guest_ram)(struct vcpu *v, uint64_t gpa, uint64_t len);
	/* Called on every return to the VMM before timers run. */
	void (*resync)(struct vcpu *v, uint64_t now);
	/* Called on the vCPU's thread once it is set up, before the guest
	 * first runs: from then on the thread makes only the system calls
	 * of its loop. Non-zero: the op has stopped the VM, the thread ends. */
	int (*confine)(struct vcpu *v);
	/* The VM cannot go on: the guest broke it (triple fault, internal
	 * error...), or the host refused the vCPU what it needs (a thread,
	 * memory, a timer): one line. */
	void (*fatal)(struct vcpu *v, bool host, const char *what);
};

/* Why KVM_RUN returned, as --stats counts it. */
enum vcpu_exit_kind {
	VCPU_EXIT_HLT,
	VCPU_EXIT_IO,
	VCPU_EXIT_MMIO,
	VCPU_EXIT_MSR,
	VCPU_EXIT_IRQ_WINDOW, /* the guest can now take a pending vector */
	VCPU_EXIT_KICK, /* interrupted: a timer, an IPI or a stop kicked it */
	VCPU_EXIT_OTHER, /* the fatal ones, and what KVM may add */
	VCPU_EXIT_KINDS
};

struct vcpu_stats {
	uint64_t host_wakeups; /* returns from the idle wait */
	uint64_t halts;
	uint64_t exits;
	uint64_t exits_by_kind[VCPU_EXIT_KINDS];
	uint64_t injections;
	uint64_t timers_fired_hard;
	uint64_t timers_fired_deferred;
	uint64_t kicks_received;
	/* halts that spun for a hard expiry instead of sleeping, and the
	 * time they spun (what they yielded to other threads included) */
	uint64_t halt_polls;
	uint64_t halt_poll_ns;
	uint64_t halt_polls_given_way; /* ...that another thread cut short */
	uint64_t halt_polls_near; /* ...for an expiry the advance found too
				   * near to wake ahead of (not --halt-poll) */
	/* periodic expiries (PV slots and the APIC timer) that ran a whole
	 * period or more late, and of those the ones --missed-ticks let
	 * through as a tick */
	uint64_t ticks_late;
	uint64_t ticks_late_delivered;
	/* periodic timers (PV slots and the APIC timer) set with a period
	 * below LULL_PERIOD_FLOOR_NS and raised to it */
	uint64_t periods_floored;
	/* the kernel's count of this thread's sleeps from its first entry
	 * into the guest to its exit: a cross-check of host_wakeups */
	uint64_t kernel_voluntary_switches;
	/* the thread's CPU time, user and system, over its whole life:
	 * what this vCPU cost the host, apart from lull's other threads */
	uint64_t thread_cpu_ns;
	struct histogram hard_lateness_ns;
	struct histogram deferred_delay_ns;
	/* hard timers later than a threshold, and where their time went */
	struct lateness late;
};

enum vcpu_state { VCPU_IN_VMM, VCPU_IN_GUEST, VCPU_IDLE };

/* The two ways back to a hard timer, each with its timer advance. */
enum vcpu_wake_path {
	VCPU_WAKE_HALTED, /* from the idle wait */
	VCPU_WAKE_RUNNING, /* the kick out of KVM_RUN */
	VCPU_WAKE_PATHS
};

struct vcpu {
	unsigned index;
	int fd; /* -1 for a vCPU without KVM (unit tests) */
	uint64_t created_raw_ns; /* CLOCK_MONOTONIC_RAW, just after
				  * KVM_CREATE_VCPU returned */
	struct kvm_run *run;
	size_t run_size;
	bool sync_regs; /* KVM_CAP_SYNC_REGS: regs travel in kvm_run */
	bool sync_events; /* ...and so can an interrupt to inject */
	struct kvm_regs regs_cache; /* used when sync_regs is false */

	const struct vcpu_ops *ops;
	void *owner; /* the VM; opaque here */
	const atomic_bool *stop;
	uint64_t slop_ns;

	struct wheel wheel;
	struct apic apic;
	struct idle_wait idle;
	/* in sleep_until: timers that run now waited for a wake, and the
	 * vCPU enters again only once woken */
	bool halted;
	/* INIT and SIPI: an AP that waits for them does not enter the guest */
	bool wait_for_sipi;
	struct kvm_sregs reset_sregs; /* KVM's power-on state, for SIPI */

	pthread_t thread; /* for join, written by the creator */
	pthread_t self; /* for kicks, written by the thread before it runs */
	bool thread_started;
	timer_t kick_timer;
	bool kick_timer_made;
	uint64_t kick_armed_at;
	/* print each late hard timer on stderr, and sample the scheduler */
	bool trace_late;

	_Atomic int state;
	atomic_bool kick_pending;
	_Atomic uint64_t posted[4]; /* vectors sent by other threads */
	_Atomic uint64_t posted_level[4]; /* ...of which level-triggered */
	atomic_bool init_posted;
	_Atomic int sipi_posted; /* a vector, or -1 */
	atomic_uint nmi_posted; /* NMIs sent, not yet queued in KVM */
	bool nmi_taken; /* one was queued since the vCPU halted: it wakes */

	/* hard timers' wakes moved earlier by what the way back costs,
	 * their vectors held until their expiry (timers/advance.h) */
	struct advance advance[VCPU_WAKE_PATHS];
	/* the idle wait's last catch-up, when it ended the wait: the loop
	 * takes it rather than run another */
	uint64_t caught_up_at;
	/* the guest's run before a timer kick (VCPU_MIN_RUN_NS and on), and
	 * when KVM_RUN returned for the timer kick that ended it, if one did */
	uint64_t min_run_ns;
	uint64_t kicked_at;
	uint64_t halt_poll_ns; /* 0: a halted vCPU always sleeps */

	struct vcpu_stats stats;
};

/* Sets up everything but the thread. kvm_fd/vm_fd < 0 builds a vCPU with
 * no KVM behind it, for unit tests of the code above it. */
int vcpu_init(struct vcpu *v, unsigned index, int kvm_fd, int vm_fd,
	      const struct vcpu_ops *ops, void *owner, const atomic_bool *stop,
	      uint64_t slop_ns, uint64_t now);
void vcpu_destroy(struct vcpu *v);
/* Hard timers later than threshold_ns have their lateness charged to
 * causes (lateness.h); with `trace`, each is printed on stderr as it is
 * delivered and the scheduler's view of the thread (schedstat) is
 * sampled. Before vcpu_start. */
void vcpu_set_lateness(struct vcpu *v, uint64_t threshold_ns, bool trace);
/*
 * In a timer's callback during a run-ahead (the timer advance): keep what
 * is staged from the guest until host time t as well, where t is only a
 * little past the expiry run ahead to; false if it is not (the timer is
 * then re-armed for t instead). The vCPU's own thread.
 */
bool vcpu_hold_until(struct vcpu *v, uint64_t t);
/* The timer advance on or off (it is on unless told). Before vcpu_start. */
void vcpu_set_advance(struct vcpu *v, bool on);
/*
 * A halted vCPU spins, rather than sleeps, for a hard expiry at most ns
 * away (0, unless told: never): the host's wake latency is not paid where
 * the wait is about that short. Deferrable timers never make it spin.
 * Before vcpu_start.
 */
void vcpu_set_halt_poll(struct vcpu *v, uint64_t ns);
int vcpu_start(struct vcpu *v);
void vcpu_join(struct vcpu *v);

void vcpu_kick(struct vcpu *v);
void vcpu_post_vector(struct vcpu *v, uint8_t vector);
/* The same, level-triggered (`level`): its TMR bit is set on acceptance. */
void vcpu_post_vector_trigger(struct vcpu *v, uint8_t vector, bool level);
/* INIT puts the vCPU in wait-for-SIPI; a SIPI then starts it in real mode
 * at vector << 12 (a SIPI to a vCPU not waiting is ignored). */
void vcpu_post_init(struct vcpu *v);
void vcpu_post_sipi(struct vcpu *v, uint8_t vector);
/* An NMI (delivery mode NMI): queued in KVM on the vCPU's thread, which
 * leaves a halt for it. */
void vcpu_post_nmi(struct vcpu *v);
/*
 * Delivers an IPI from `from`'s APIC (NULL: from the I/O APIC) to `to`, if
 * `to` is one of its destinations: fixed (and lowest priority, which lull gives to every
 * destination named, as fixed) vectors join its IRR; INIT and SIPI start
 * APs. False for a delivery mode lull does not model (NMI, SMI, ExtINT):
 * nothing is delivered. Any thread.
 */
bool vcpu_send_ipi(struct vcpu *from, struct vcpu *to,
		   const struct apic_ipi *ipi);

/*
 * The vCPU's timers, on its own thread: a device keeps its wheel_timer
 * (wheel_timer_init) and arms it here, never on the wheel directly, so the
 * vCPU loop alone decides when the wheel runs. (Re)arms t at `expires`:
 * deferrable or hard, with `tolerance` as the wheel reads it (wheel.h).
 * Also from t's own callback, for a periodic timer.
 */
static inline void vcpu_timer_arm(struct vcpu *v, struct wheel_timer *t,
				  uint64_t expires, bool deferrable,
				  uint64_t tolerance)
{
	wheel_del(&v->wheel, t);
	wheel_timer_set_flags(t, deferrable ? WHEEL_DEFERRABLE : 0);
	wheel_add(&v->wheel, t, expires, tolerance);
}

/* Disarms t; true if it was pending. */
static inline bool vcpu_timer_stop(struct vcpu *v, struct wheel_timer *t)
{
	return wheel_del(&v->wheel, t) == 1;
}

/* From a periodic timer's callback: counts what its catch-up decided. */
static inline void vcpu_count_catch_up(struct vcpu *v,
				       const struct periodic_catch_up *c)
{
	v->stats.ticks_late += c->late;
	v->stats.ticks_late_delivered += c->late && c->deliver;
}

/*
 * Every periodic timer a guest sets (APIC periodic mode, a periodic PV
 * slot, Xen's set_periodic) takes its period through here: below
 * LULL_PERIOD_FLOOR_NS it is raised to that and counted, since a tiny
 * period would be a storm the host pays for, and a guest's request that
 * lull changed must show in --stats.
 */
static inline uint64_t vcpu_floor_period(struct vcpu *v, uint64_t period)
{
	if (period >= LULL_PERIOD_FLOOR_NS)
		return period;
	v->stats.periods_floored++;
	return LULL_PERIOD_FLOOR_NS;
}

/* From a timer callback on the vCPU's own thread: a timer that expired at
 * `expiry` raises vector `times` times (see apic_raise for `accumulate`).
 * Returns raises merged or dropped. */
uint32_t vcpu_raise_timer(struct vcpu *v, uint8_t vector, uint32_t times,
			  bool accumulate, bool deferred, uint64_t expiry);

/* General registers at the current exit, and writing them back. */
struct kvm_regs *vcpu_regs(struct vcpu *v);
void vcpu_regs_changed(struct vcpu *v);

/* Blocks SIG_VCPU_KICK in the calling thread and installs its handler;
 * call once in main() before any thread is created. */
int vcpu_signals_init(void);

#endif
