/* --push URL: a continuous run's periods sent to a Grafana Pyroscope server through its HTTP
 * ingest API (POST /ingest?name=APP{k=v,...}&from=&until=&format=pprof..., the profile a
 * multipart form's "profile" file, as Pyroscope's own Go client sends it), by libcurl on a
 * thread of its own.  The run never waits for the network: a period is queued (a bounded
 * queue) and the run goes on; an upload that fails is retried with exponential backoff, a
 * bounded number of times; what cannot be queued or sent is dropped and counted. */
#ifndef BPFPROF_PUSH_H
#define BPFPROF_PUSH_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* Periods waiting at most, the one being sent included. */
#define PUSH_QUEUE_MAX 16
/* Tries of one upload (the first and the retries), backoff doubling from PUSH_BACKOFF_MS. */
#define PUSH_TRIES 4
#define PUSH_BACKOFF_MS 500

struct pusher;

struct push_counts {
	__u64 queued;       /* accepted into the queue */
	__u64 sent;         /* answered 2xx */
	__u64 retries;      /* tries after a failure */
	__u64 dropped_full; /* the queue was full: never queued */
	__u64 dropped_failed; /* every try failed (unreachable, 5xx, 429, timeout) */
	__u64 rejected;     /* answered 4xx (not 408/429): the request itself is wrong */
	__u64 dropped_exit; /* still queued when the run ended and the grace time ran out */
	char last_error[128]; /* why the last try failed */
};

/* Checks url (http:// or https://, a host) and makes the ingest endpoint of it: URL/ingest, or
 * the URL as given when its path already ends in /ingest.  0 (*ingest malloc'd) or -EINVAL
 * (printed). */
int push_url_check(const char *url, char **ingest);

/* Pyroscope's application name with labels: APP{k=v,k2=v2} (APP alone without labels).  The
 * characters are checked by push_label_check() and push_app_check().  NULL on ENOMEM. */
char *push_app_name(const char *app, char *const *labels, int nr_labels);
/* --app: letters, digits and . _ - only.  0 or -EINVAL (printed). */
int push_app_check(const char *app);
/* --label k=v: k a Prometheus label name ([A-Za-z_][A-Za-z0-9_]*, not __...), v non-empty
 * without , { } = or control characters (they would break the name's syntax).  0 or -EINVAL
 * (printed). */
int push_label_check(const char *label);

/* Starts the sender thread for endpoint ingest.  0 or -errno (printed). */
int pusher_new(const char *ingest, struct pusher **out);

/* Queues a period's profile (body: gzip'd profile.proto, now the pusher's) with its query
 * string (name=...&from=...: now the pusher's too).  Never waits: false when the queue is full
 * (both freed, the drop counted). */
bool pusher_push(struct pusher *p, void *body, size_t len, char *query);

/* The counts so far (a consistent copy). */
void pusher_counts(struct pusher *p, struct push_counts *c);

/* Gives what is queued until grace_ms to go out, then stops the thread (an upload under way is
 * cut) and counts what is left as dropped_exit.  *c gets the final counts (c may be NULL). */
void pusher_free(struct pusher *p, unsigned grace_ms, struct push_counts *c);
#endif
