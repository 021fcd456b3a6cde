/* C++ demangling through libstdc++'s __cxa_demangle, loaded with dlopen on first use so that
 * bpfprof does not depend on libstdc++ (and pays nothing when no C++ name shows up). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "sym/syms.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_load(void)
{
	/* never dlclose'd: the function stays in use for the life of the process */
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		cxa_demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

char *demangle(const char *name)
{
	char *out;
	int status = -1;

	/* Itanium ABI names only; anything else would be a wasted call (and a dlopen) */
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	pthread_once(&cxa_once, cxa_load);
	if (!cxa_demangle)
		return NULL;
	out = cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(out);
		return NULL;
	}
	return out;
}
