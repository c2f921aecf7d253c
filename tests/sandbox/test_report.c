// SPDX-License-Identifier: MIT
/*
 * The filters themselves, without KVM: a confined thread's allowed calls
 * work, and a forbidden one ends the process with LULL_EXIT_SECCOMP and
 * one line on stderr naming the thread and the call. Each case confines
 * a forked child, which then cannot take Criterion's own calls.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/exit_status.h"
#include "vmm/sandbox.h"

enum child_role { MAIN, VCPU, MAIN_UNFILTERED };

/* The fds the confined main thread is given: the console's eventfd and
 * destination. */
#define CONSOLE_WAKE_FD 5
#define CONSOLE_OUT_FD 6

struct outcome {
	int status; /* exit status, or 128 + signal */
	char err[512];
};

/*
 * Forks a child that confines itself as `role`, writes "allowed\n" to
 * stderr (allowed everywhere), then calls `forbidden`, then exits 0.
 */
static struct outcome run_child(enum child_role role, void (*forbidden)(void))
{
	struct outcome o = { 0 };
	int pipefd[2], ws;
	ssize_t n, got = 0;
	pid_t pid;

	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		char err[160];
		int r;

		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		if (sandbox_init(role != MAIN_UNFILTERED) < 0)
			_exit(90);
		r = role == VCPU ?
			    sandbox_enter_vcpu(7, 3, 4, -1, err, sizeof(err)) :
			    sandbox_enter_main(CONSOLE_WAKE_FD, CONSOLE_OUT_FD,
					       err, sizeof(err));
		if (r < 0) {
			dprintf(STDERR_FILENO, "enter: %s\n", err);
			_exit(91);
		}
		if (write(STDERR_FILENO, "allowed\n", 8) != 8)
			_exit(92);
		forbidden();
		_exit(0);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], o.err + got, sizeof(o.err) - 1 - got)) > 0)
		got += n;
	close(pipefd[0]);
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	o.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	return o;
}

/* No thread of lull ever makes a socket, in any build (sanitizer builds
 * allow the runtime's open, so a file would not do). */
static void make_a_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	(void)fd;
}

/* KVM_RUN on an fd that is not the vCPU's own (3 is). */
static void kvm_run_on_another_fd(void)
{
	ioctl(STDERR_FILENO, 0xae80, 0);
}

/* The console's socket destination is 6: not stderr. */
static void send_to_another_fd(void)
{
	send(STDERR_FILENO, "x", 1, MSG_DONTWAIT);
}

static void read_no_new_privs_and_caps(void)
{
	/* prctl is not on main's list either: checked through exit */
	_exit(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : 93);
}

Test(sandbox, forbidden_call_is_named_and_ends_lull)
{
	struct outcome o = run_child(MAIN, make_a_socket);

	cr_assert_eq(o.status, LULL_EXIT_SECCOMP, "status %d\n%s", o.status,
		     o.err);
	cr_assert(strstr(o.err, "allowed\n"), "%s", o.err);
	cr_assert(
		strstr(o.err, "lull: thread main made system call socket (41)"),
		"%s", o.err);
	cr_assert(strstr(o.err, "--no-seccomp"), "%s", o.err);
}

Test(sandbox, vcpu_ioctl_is_pinned_to_its_own_fd)
{
	struct outcome o = run_child(VCPU, kvm_run_on_another_fd);

	cr_assert_eq(o.status, LULL_EXIT_SECCOMP, "status %d\n%s", o.status,
		     o.err);
	cr_assert(
		strstr(o.err,
		       "lull: thread vcpu7 made system call ioctl (16) request 0xae80"),
		"%s", o.err);
}

Test(sandbox, main_sends_only_to_its_console)
{
	struct outcome o = run_child(MAIN, send_to_another_fd);

	cr_assert_eq(o.status, LULL_EXIT_SECCOMP, "status %d\n%s", o.status,
		     o.err);
	cr_assert(
		strstr(o.err, "lull: thread main made system call sendto (44)"),
		"%s", o.err);
}

Test(sandbox, no_seccomp_confines_without_a_filter)
{
	struct outcome o =
		run_child(MAIN_UNFILTERED, read_no_new_privs_and_caps);

	cr_assert_eq(o.status, 0, "status %d\n%s", o.status, o.err);
	cr_assert_null(strstr(o.err, "seccomp"), "%s", o.err);
}
