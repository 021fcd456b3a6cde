// SPDX-License-Identifier: GPL-2.0
/* The machine a run was taken on (core/machine.h). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "core/machine.h"

/* The command line of this process, its arguments separated by spaces (cut to size). */
static void own_cmdline(char *buf, size_t size)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		n = 0;
	buf[n] = '\0';
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
}

void machine_header(char *buf, size_t size, __s64 captured_ns)
{
	char host[256] = "?", when[64] = "?", cmdline[512];
	struct utsname u = {};
	time_t t = captured_ns ? (time_t)(captured_ns / 1000000000) : time(NULL);
	struct tm tm;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	uname(&u);
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y", &tm);
	own_cmdline(cmdline, sizeof(cmdline));
	/* perf's keys, so that a perf user reads it as perf report --header */
	snprintf(buf, size,
		 "captured on    : %s\n# hostname : %s\n# os release : %s\n# arch : %s\n"
		 "# nrcpus online : %ld\n# nrcpus avail : %ld\n# cmdline : %s",
		 when, host, u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN),
		 sysconf(_SC_NPROCESSORS_CONF), cmdline);
}
