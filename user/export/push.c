// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/common.h"
#include "export/curlrt.h"
#include "export/push.h"

/* One try's bounds: a server that accepts the connection and never answers does not hold the
 * queue for longer than this. */
#define CONNECT_TIMEOUT_MS 3000
#define TRY_TIMEOUT_MS 15000

struct push_item {
	void *body;
	size_t len;
	char *query;
	unsigned tries;
};

struct pusher {
	char *ingest;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* CLOCK_MONOTONIC */
	struct push_item q[PUSH_QUEUE_MAX];
	size_t head, nr;
	bool stopping;
	__u64 stop_at_ns; /* stopping: uploads are cut here */
	struct push_counts counts;
};

/* ---- what is checked before tracing ---- */

int push_url_check(const char *url, char **ingest)
{
	CURLU *u;
	char *scheme = NULL, *host = NULL, *path = NULL, *query = NULL, *frag = NULL;
	const char *why = NULL;
	size_t len;
	int err = -EINVAL;

	*ingest = NULL;
	if (curl_rt_load())
		return -EINVAL;
	u = curl_url();
	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0))
		why = "not a URL";
	else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
		 (strcmp(scheme, "http") && strcmp(scheme, "https")))
		why = "not http:// or https://";
	else if (curl_url_get(u, CURLUPART_HOST, &host, 0) || !*host)
		why = "no host";
	else if (!curl_url_get(u, CURLUPART_QUERY, &query, 0) ||
		 !curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0))
		why = "a query or fragment: bpfprof makes the query (name, from, until...)";
	else if (curl_url_get(u, CURLUPART_PATH, &path, 0))
		why = "no path";
	if (why) {
		p_err("invalid --push URL '%s': %s (expected the Pyroscope server, e.g. "
		      "http://localhost:4040)", url, why);
		goto cleanup;
	}
	/* the server's address, as Pyroscope's clients take it, or its ingest endpoint */
	len = strlen(path);
	while (len && path[len - 1] == '/')
		path[--len] = '\0';
	if (len < 7 || strcmp(path + len - 7, "/ingest")) {
		char *full = malloc(len + sizeof("/ingest"));

		if (!full) {
			err = -ENOMEM;
			goto cleanup;
		}
		sprintf(full, "%s/ingest", path);
		err = curl_url_set(u, CURLUPART_PATH, full, 0) ? -EINVAL : 0;
		free(full);
		if (err)
			goto cleanup;
	}
	err = curl_url_get(u, CURLUPART_URL, ingest, 0) ? -ENOMEM : 0;
cleanup:
	curl_free(scheme);
	curl_free(host);
	curl_free(path);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(u);
	return err;
}

int push_app_check(const char *app)
{
	for (const char *c = app; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
			goto bad;
	if (*app)
		return 0;
bad:
	p_err("invalid --app '%s' (letters, digits, '.', '_' and '-', as Pyroscope's application "
	      "names)", app);
	return -EINVAL;
}

int push_label_check(const char *label)
{
	const char *eq = strchr(label, '='), *c;
	bool ok = eq && eq > label && (isalpha((unsigned char)*label) || *label == '_') &&
		  strncmp(label, "__", 2) && eq[1];

	for (c = label; ok && c < eq; c++)
		ok = isalnum((unsigned char)*c) || *c == '_';
	for (c = eq ? eq + 1 : label; ok && *c; c++)
		ok = !iscntrl((unsigned char)*c) && !strchr(",{}=", *c);
	if (ok)
		return 0;
	p_err("invalid --label '%s' (expected KEY=VALUE: KEY letters, digits and '_' not starting "
	      "with a digit or '__', VALUE non-empty without ',', '{', '}' or '=')", label);
	return -EINVAL;
}

char *push_app_name(const char *app, char *const *labels, int nr_labels)
{
	size_t len = strlen(app) + 3;
	char *name, *at;

	for (int i = 0; i < nr_labels; i++)
		len += strlen(labels[i]) + 1;
	name = malloc(len);
	if (!name)
		return NULL;
	at = name + sprintf(name, "%s", app);
	for (int i = 0; i < nr_labels; i++)
		at += sprintf(at, "%c%s", i ? ',' : '{', labels[i]);
	if (nr_labels)
		strcpy(at, "}");
	return name;
}

/* ---- the sender thread ---- */

static void item_free(struct push_item *it)
{
	free(it->body);
	free(it->query);
	memset(it, 0, sizeof(*it));
}

/* Aborts an upload under way once the run has ended and its grace time is over. */
static int progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		    curl_off_t ulnow)
{
	struct pusher *p = ctx;
	bool cut;

	pthread_mutex_lock(&p->lock);
	cut = p->stopping && now_ns() >= p->stop_at_ns;
	pthread_mutex_unlock(&p->lock);
	return cut;
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	return size * n;
}

enum try_result { TRY_SENT, TRY_REJECTED, TRY_FAILED };

/* One POST of it: the profile as the multipart form's "profile" file, as Pyroscope's Go client
 * sends it.  why gets the failure. */
static enum try_result try_send(struct pusher *p, CURL *curl, const struct push_item *it,
				char *why, size_t size)
{
	char errbuf[CURL_ERROR_SIZE] = "", *url;
	enum try_result res = TRY_FAILED;
	curl_mimepart *part;
	curl_mime *mime;
	long code = 0;
	CURLcode rc;

	url = malloc(strlen(p->ingest) + strlen(it->query) + 2);
	mime = curl_mime_init(curl);
	part = mime ? curl_mime_addpart(mime) : NULL;
	if (!url || !part) {
		snprintf(why, size, "%s", strerror(ENOMEM));
		goto cleanup;
	}
	sprintf(url, "%s?%s", p->ingest, it->query);
	curl_mime_name(part, "profile");
	curl_mime_filename(part, "profile.pprof");
	curl_mime_type(part, "application/octet-stream");
	curl_mime_data(part, it->body, it->len);
	curl_easy_reset(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "bpfprof");
	/* timeouts without SIGALRM: this is not the main thread */
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)TRY_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, p);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(curl);
	if (rc != CURLE_OK) {
		snprintf(why, size, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto cleanup;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		res = TRY_SENT;
	else if (code == 408 || code == 429 || code >= 500)
		res = TRY_FAILED; /* the server's trouble: worth another try */
	else
		res = TRY_REJECTED;
	if (res != TRY_SENT)
		snprintf(why, size, "HTTP %ld from %s", code, p->ingest);
cleanup:
	curl_mime_free(mime);
	free(url);
	return res;
}

/* Waits (under lock) the backoff of a failed try: PUSH_BACKOFF_MS doubled at each try, cut
 * short by the end of the run's grace time. */
static void backoff(struct pusher *p, unsigned tries)
{
	__u64 until = now_ns() + ((__u64)PUSH_BACKOFF_MS * 1000000ULL << (tries - 1)), end;
	struct timespec ts;

	for (;;) {
		end = p->stopping && p->stop_at_ns < until ? p->stop_at_ns : until;
		if (now_ns() >= end)
			return;
		ts.tv_sec = end / 1000000000ULL;
		ts.tv_nsec = end % 1000000000ULL;
		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
}

/* The head of the queue is sent, rejected or given up; then the next. */
static void *sender(void *arg)
{
	struct pusher *p = arg;
	CURL *curl = curl_easy_init();
	char why[sizeof(p->counts.last_error)];
	enum try_result res;
	struct push_item *it;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->nr && !p->stopping)
			pthread_cond_wait(&p->wake, &p->lock);
		if (!p->nr || (p->stopping && now_ns() >= p->stop_at_ns))
			break;
		it = &p->q[p->head];
		pthread_mutex_unlock(&p->lock);
		res = curl ? try_send(p, curl, it, why, sizeof(why)) : TRY_FAILED;
		if (!curl)
			snprintf(why, sizeof(why), "cannot set up libcurl");
		pthread_mutex_lock(&p->lock);
		it->tries++;
		if (res != TRY_SENT)
			snprintf(p->counts.last_error, sizeof(p->counts.last_error), "%s", why);
		if (res == TRY_FAILED && it->tries < PUSH_TRIES) {
			p->counts.retries++;
			backoff(p, it->tries);
			continue;
		}
		if (res == TRY_SENT)
			p->counts.sent++;
		else if (res == TRY_REJECTED)
			p->counts.rejected++;
		else
			p->counts.dropped_failed++;
		item_free(it);
		p->head = (p->head + 1) % PUSH_QUEUE_MAX;
		p->nr--;
	}
	/* the run is over and its grace time too: what is left is dropped */
	for (; p->nr; p->nr--, p->head = (p->head + 1) % PUSH_QUEUE_MAX) {
		item_free(&p->q[p->head]);
		p->counts.dropped_exit++;
	}
	pthread_mutex_unlock(&p->lock);
	curl_easy_cleanup(curl);
	return NULL;
}

int pusher_new(const char *ingest, struct pusher **out)
{
	struct pusher *p = calloc(1, sizeof(*p));
	pthread_condattr_t attr;
	sigset_t all, old;
	int err;

	if (!p || !(p->ingest = strdup(ingest))) {
		free(p);
		p_err("cannot set up --push: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* before any thread: libcurl's global state is not thread-safe to set up */
	if (curl_rt_load() || curl_global_init(CURL_GLOBAL_DEFAULT)) {
		free(p->ingest);
		free(p);
		p_err("cannot set up --push: libcurl's initialization failed");
		return -EIO;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &attr);
	pthread_condattr_destroy(&attr);
	/* the run loop is the thread signals wake */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = -pthread_create(&p->thread, NULL, sender, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		p_err("cannot start the --push thread: %s", strerror(-err));
		pusher_free(p, 0, NULL);
		return err;
	}
	p->started = true;
	*out = p;
	return 0;
}

bool pusher_push(struct pusher *p, void *body, size_t len, char *query)
{
	bool queued = false;

	pthread_mutex_lock(&p->lock);
	if (p->nr < PUSH_QUEUE_MAX && !p->stopping) {
		p->q[(p->head + p->nr) % PUSH_QUEUE_MAX] = (struct push_item){ body, len, query, 0 };
		p->nr++;
		p->counts.queued++;
		queued = true;
		pthread_cond_signal(&p->wake);
	} else {
		p->counts.dropped_full++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!queued) {
		free(body);
		free(query);
	}
	return queued;
}

void pusher_counts(struct pusher *p, struct push_counts *c)
{
	pthread_mutex_lock(&p->lock);
	*c = p->counts;
	pthread_mutex_unlock(&p->lock);
}

void pusher_free(struct pusher *p, unsigned grace_ms, struct push_counts *c)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	p->stop_at_ns = now_ns() + grace_ms * 1000000ULL;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (p->started)
		pthread_join(p->thread, NULL);
	if (c)
		*c = p->counts;
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	curl_global_cleanup();
	free(p->ingest);
	free(p);
}
