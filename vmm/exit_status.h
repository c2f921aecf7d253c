/* SPDX-License-Identifier: MIT */
/*
 * lull's exit status. A guest's debug-exit write of v ends lull with v & 0xff;
 * everything else lull decides itself uses the values below (sysexits.h
 * numbers where one fits, timeout(1)'s 124, 128 + signal for signals).
 * A guest can of course write these values too; the stderr line tells.
 */
#ifndef LULL_EXIT_STATUS_H
#define LULL_EXIT_STATUS_H

/* The guest asked for a reset (ACPI reset register, i8042 reset pulse):
 * lull does not reboot it but ends, so that whoever started it decides.
 * 32 is crosvm's status for a guest reset; it lies below sysexits.h's
 * 64-78 and collides with no other status of lull's. */
#define LULL_EXIT_REBOOT 32
#define LULL_EXIT_USAGE 64 /* bad command line */
#define LULL_EXIT_BAD_GUEST \
	65 /* guest ELF missing, malformed, not PVH, too big */
#define LULL_EXIT_NO_KVM 69 /* /dev/kvm missing, not permitted, or unusable */
#define LULL_EXIT_HOST 71 /* the host refused a resource (memory, threads) */
#define LULL_EXIT_IO 74 /* --stats could not be written (guest status was 0) */
#define LULL_EXIT_TIMEOUT 124 /* --timeout expired */
#define LULL_EXIT_GUEST_CRASH \
	125 /* triple fault, KVM internal error, failed entry */
#define LULL_EXIT_SIGNAL_BASE 128 /* SIGHUP 129, SIGINT 130, SIGTERM 143 */
/* lull itself made a system call its seccomp filter forbids (sandbox.h);
 * 128 + SIGSYS, as if the filter had killed it */
#define LULL_EXIT_SECCOMP 159

#endif
