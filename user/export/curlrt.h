/* libcurl, loaded at run time by the runs that push (--push): linked, it and the 29 libraries it
 * pulls in (TLS, Kerberos, LDAP, SSH, IDN...) cost every run ~5 ms of CPU and ~10 ms of wall
 * time before main(), for an option few runs take.  Include this instead of <curl/curl.h>: the
 * curl_* calls below go through the table curl_rt_load() fills. */
#ifndef BPFPROF_CURLRT_H
#define BPFPROF_CURLRT_H
/* curl_easy_setopt() as a plain function (the type-checking macro would wrap our pointer) */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#define CURL_RT_FUNCS(X)                                                                         \
	X(curl_global_init) X(curl_global_cleanup) X(curl_easy_init) X(curl_easy_cleanup)        \
	X(curl_easy_reset) X(curl_easy_setopt) X(curl_easy_perform) X(curl_easy_getinfo)         \
	X(curl_easy_strerror) X(curl_easy_escape) X(curl_free) X(curl_url) X(curl_url_set)       \
	X(curl_url_get) X(curl_url_cleanup) X(curl_mime_init) X(curl_mime_addpart)               \
	X(curl_mime_name) X(curl_mime_filename) X(curl_mime_type) X(curl_mime_data)              \
	X(curl_mime_free)

struct curl_rt {
#define CURL_RT_FIELD(f) __typeof__(f) *f;
	CURL_RT_FUNCS(CURL_RT_FIELD)
#undef CURL_RT_FIELD
};

extern struct curl_rt curl_rt;

/* Loads libcurl (once; later calls return the first one's result).  0, or -ENOENT when it or
 * one of its functions is missing (printed). */
int curl_rt_load(void);

#ifndef CURL_RT_IMPL
/* curl.h's own macros, which only check that these get three arguments */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init (*curl_rt.curl_global_init)
#define curl_global_cleanup (*curl_rt.curl_global_cleanup)
#define curl_easy_init (*curl_rt.curl_easy_init)
#define curl_easy_cleanup (*curl_rt.curl_easy_cleanup)
#define curl_easy_reset (*curl_rt.curl_easy_reset)
#define curl_easy_setopt (*curl_rt.curl_easy_setopt)
#define curl_easy_perform (*curl_rt.curl_easy_perform)
#define curl_easy_getinfo (*curl_rt.curl_easy_getinfo)
#define curl_easy_strerror (*curl_rt.curl_easy_strerror)
#define curl_easy_escape (*curl_rt.curl_easy_escape)
#define curl_free (*curl_rt.curl_free)
#define curl_url (*curl_rt.curl_url)
#define curl_url_set (*curl_rt.curl_url_set)
#define curl_url_get (*curl_rt.curl_url_get)
#define curl_url_cleanup (*curl_rt.curl_url_cleanup)
#define curl_mime_init (*curl_rt.curl_mime_init)
#define curl_mime_addpart (*curl_rt.curl_mime_addpart)
#define curl_mime_name (*curl_rt.curl_mime_name)
#define curl_mime_filename (*curl_rt.curl_mime_filename)
#define curl_mime_type (*curl_rt.curl_mime_type)
#define curl_mime_data (*curl_rt.curl_mime_data)
#define curl_mime_free (*curl_rt.curl_mime_free)
#endif
#endif
