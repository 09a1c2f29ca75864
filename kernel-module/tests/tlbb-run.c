// SPDX-License-Identifier: GPL-2.0
/*
 * tlbb-run <seconds> <program> [args...]: the in-guest test launcher.
 *
 * Runs the program in a process group of its own and waits for it.  When
 * it runs longer than <seconds> the whole group gets SIGTERM, then SIGKILL
 * five seconds later, and tlbb-run exits 124.  When the program ends, any
 * process it left behind in its group is killed, so no stray child can
 * hold the console pipe or disturb the next test.  Otherwise the exit
 * status is the program's (128 + signal when a signal killed it).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t expired;

static void on_alarm(int sig)
{
	(void)sig;
	expired = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	unsigned int limit;
	int status, killed = 0;
	pid_t pid, r;

	if (argc < 3 || !(limit = strtoul(argv[1], NULL, 10))) {
		fprintf(stderr, "usage: tlbb-run <seconds> <program> [args]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("tlbb-run: fork");
		return 2;
	}
	if (!pid) {
		setpgid(0, 0);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "tlbb-run: exec %s: %s\n", argv[2],
			strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	sigaction(SIGALRM, &sa, NULL);
	alarm(limit);
	for (;;) {
		r = waitpid(pid, &status, 0);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			perror("tlbb-run: waitpid");
			return 2;
		}
		if (expired && !killed) {
			fprintf(stderr, "tlbb-run: %s ran over %u s: SIGTERM\n",
				argv[2], limit);
			kill(-pid, SIGTERM);
			killed = 1;
			expired = 0;
			alarm(5);
		} else if (expired) {
			kill(-pid, SIGKILL);
			expired = 0;
		}
	}
	alarm(0);
	kill(-pid, SIGKILL);	/* whatever the test left behind */
	if (killed)
		return 124;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
