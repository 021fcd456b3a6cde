/* The bench programs' measure of memory: this process's RSS and its peak since a reset. */
#ifndef BPFPROF_BENCH_PEAK_H
#define BPFPROF_BENCH_PEAK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VmRSS or VmHWM of this process, MB. */
static inline double status_mb(const char *field)
{
	char line[256];
	double kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			kb = strtod(line + strlen(field) + 1, NULL);
	if (f)
		fclose(f);
	return kb / 1024;
}

/* VmHWM from here on (/proc/self/clear_refs); -1, said on stderr, when it cannot be reset. */
static inline int reset_peak(const char *prog)
{
	FILE *f = fopen("/proc/self/clear_refs", "we");

	if (!f || fputs("5", f) == EOF || fclose(f)) {
		fprintf(stderr, "%s: cannot reset the peak RSS (/proc/self/clear_refs)\n", prog);
		return -1;
	}
	return 0;
}
#endif
