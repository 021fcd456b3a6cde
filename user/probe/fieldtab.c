// SPDX-License-Identifier: GPL-2.0
/* --by and --filter over the events of a run: each event's fields looked up and its filter
 * compiled into the tables the kernel side reads (fields.h: event_fields). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/common.h"
#include "probe/fields.h"
#include "probe/filter.h"
#include "probe/probe.h"

/* Whether the pointers an event hands over point into user memory: a user function's, and a
 * syscall's arguments. */
static bool event_user_mem(const struct probe_event *e)
{
	return e->kind == PROBE_UFUNC || e->kind == PROBE_SYSCALL ||
	       (e->kind == PROBE_TP && !strncmp(e->name, "syscalls:", 9));
}

static int split_by(const char *by, struct event_fields *ef)
{
	const char *p = by;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (!len) {
			p_err("--by '%s': an empty field name", by);
			return -EINVAL;
		}
		if (ef->nr_by == FIELDS_MAX) {
			p_err("--by '%s': at most %d fields", by, FIELDS_MAX);
			return -EINVAL;
		}
		if (len >= sizeof(ef->by_names[0])) {
			p_err("--by '%s': field name too long", by);
			return -EINVAL;
		}
		snprintf(ef->by_names[ef->nr_by++], sizeof(ef->by_names[0]), "%.*s", (int)len, p);
		p += len;
		if (*p == ',' && !*++p) {
			p_err("--by '%s': an empty field name", by);
			return -EINVAL;
		}
	}
	if (!ef->nr_by) {
		p_err("--by needs a field");
		return -EINVAL;
	}
	return 0;
}

int event_fields_build(const struct probe_events *evs, const char *by, const char *filter,
		       struct event_fields *ef)
{
	unsigned slot[FIELDS_MAX] = {};
	struct field_list l = {};
	char why[1024], names[1024];
	int err = 0;

	memset(ef, 0, sizeof(*ef));
	ef->filter = filter != NULL;
	if (by && (err = split_by(by, ef)))
		return err;
	ef->nr_ev = evs->nr;
	ef->tabs = calloc(evs->nr ?: 1, sizeof(*ef->tabs));
	ef->by = calloc(evs->nr ?: 1, sizeof(*ef->by));
	if (!ef->tabs || !ef->by)
		return -ENOMEM;
	for (int i = 0; i < evs->nr && !err; i++) {
		const struct probe_event *e = &evs->ev[i];
		bool user = event_user_mem(e);
		struct field_table *t = &ef->tabs[i];

		field_list_free(&l);
		err = fields_of_event(e, &l);
		if (err) {
			p_err("cannot read the fields of %s: %s", e->name, strerror(-err));
			break;
		}
		for (int k = 0; k < ef->nr_by; k++) {
			struct field *f = &ef->by[i][k];

			err = fields_lookup(&l, ef->by_names[k], user, f, why, sizeof(why));
			if (err == -ENOENT) {
				bool func = e->kind == PROBE_UFUNC || e->kind == PROBE_KFUNC;

				p_err("%s has no field '%s'; its fields: %s%s", e->name, ef->by_names[k],
				      fields_names(&l, names, sizeof(names)),
				      func && !e->ret && !strncmp(ef->by_names[k], "retval", 6) ?
				      " (retval is the return's: FUNC%return)" : "");
				break;
			} else if (err) {
				p_err("--by %s on %s: %s", ef->by_names[k], e->name, why);
				break;
			}
			if (field_key_size(f) > slot[k])
				slot[k] = field_key_size(f);
		}
		t->nr_by = ef->nr_by;
		if (!err && filter) {
			err = filter_compile(filter, &l, user, t, why, sizeof(why));
			if (err) {
				p_err("%s: %s", e->name, why);
				break;
			}
		}
	}
	field_list_free(&l);
	if (err)
		return err == -ENOMEM ? err : -EINVAL;
	/* one layout for every event (a field may be a string in one, a number in another) */
	ef->key_size = 8;
	for (int k = 0; k < ef->nr_by; k++) {
		for (int i = 0; i < evs->nr; i++)
			ef->tabs[i].by[k] = field_desc_of(&ef->by[i][k], event_user_mem(&evs->ev[i]),
							  ef->key_size);
		ef->key_size += slot[k];
	}
	for (int i = 0; i < evs->nr; i++) {
		const struct field_table *t = &ef->tabs[i];
		bool in_record = false;

		if (evs->ev[i].kind != PROBE_TP || evs->ev[i].sys_nr >= 0)
			continue;
		for (__u32 k = 0; k < t->nr_by; k++)
			in_record |= t->by[k].src == FSRC_RECORD || t->by[k].src == FSRC_ARG ||
				     t->by[k].src == FSRC_RET;
		for (__u32 k = 0; k < t->nr_filt; k++)
			in_record |= t->filt[k].src == FSRC_RECORD || t->filt[k].src == FSRC_ARG ||
				     t->filt[k].src == FSRC_RET;
		ef->records |= in_record;
	}
	return 0;
}

void event_fields_free(struct event_fields *ef)
{
	free(ef->tabs);
	free(ef->by);
	memset(ef, 0, sizeof(*ef));
}

__u32 event_fields_key_text(const struct event_fields *ef, const void *key, field_ksym_fn ksym,
			    void *ctx, char (*cols)[FIELD_STR_LEN * 2])
{
	const char *k = key;
	__u64 idx;

	memcpy(&idx, k, 8);
	for (int i = 0; i < ef->nr_by; i++) {
		const struct field *f;
		unsigned off = idx < (__u64)ef->nr_ev ? ef->tabs[idx].by[i].key_off : 0;
		char str[FIELD_STR_LEN + 1];
		__u64 v = 0;

		if (idx >= (__u64)ef->nr_ev) {
			snprintf(cols[i], sizeof(cols[i]), "?");
			continue;
		}
		f = &ef->by[idx][i];
		if (field_is_string(f)) {
			memcpy(str, k + off, FIELD_STR_LEN);
			str[FIELD_STR_LEN] = '\0';
		} else {
			memcpy(&v, k + off, 8);
		}
		field_format_value(f, v, str, ksym, ctx, cols[i], sizeof(cols[i]));
	}
	return idx;
}
