// SPDX-License-Identifier: GPL-2.0
#define CURL_RT_IMPL
#include <dlfcn.h>
#include <errno.h>
#include "core/common.h"
#include "export/curlrt.h"

struct curl_rt curl_rt;

int curl_rt_load(void)
{
	static int loaded = 1; /* 1: not tried yet */
	void *h;

	if (loaded <= 0)
		return loaded;
	/* the soname libcurl-dev's headers are for */
	h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		p_err("--push needs libcurl: %s", dlerror());
		return loaded = -ENOENT;
	}
#define CURL_RT_SYM(f)                                                                           \
	curl_rt.f = (__typeof__(curl_rt.f))dlsym(h, #f);                                         \
	if (!curl_rt.f) {                                                                        \
		p_err("--push needs libcurl: it has no %s", #f);                                 \
		return loaded = -ENOENT;                                                         \
	}
	CURL_RT_FUNCS(CURL_RT_SYM)
#undef CURL_RT_SYM
	return loaded = 0;
}
