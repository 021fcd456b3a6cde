// SPDX-License-Identifier: GPL-2.0
/* --by and --filter over the events of a run: each event's fields looked up and its filter
 * compiled into the tables the kernel side reads (fields.h: event_fields). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/common.h"
#include "probe/fields.h"
#include "probe/filter.h"
#include "probe/probe.h"
#include "sym/cgroups.h"
#include "sym/syms.h"

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

/* A kernel function's address for the filter, kallsyms read on first use. */
static __u64 ksym_addr(const char *name, void *ctx)
{
	struct ksyms **ks = ctx;

	if (!*ks)
		*ks = ksyms__load();
	return *ks ? ksyms__addr(*ks, name) : 0;
}

/* A syscall's return value, for commands that see its exit (trace). */
static int add_syscall_ret(struct field_list *l)
{
	struct field f = { .name = "ret", .type = "long", .kind = FIELD_INT, .src = FSRC_RET,
			   .size = 8, .is_signed = true };

	for (int i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i].name, "ret"))
			return 0;
	return field_list_add(l, &f);
}

static int build(const struct probe_events *evs, const char *by, const char *filter,
		 bool sys_ret, struct event_fields *ef)
{
	unsigned slot[FIELDS_MAX] = {};
	struct field_list l = {};
	struct ksyms *ks = NULL;
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
		if (!err && sys_ret && e->kind == PROBE_SYSCALL)
			err = add_syscall_ret(&l);
		if (err) {
			p_err("cannot read the fields of %s: %s", e->name, strerror(-err));
			break;
		}
		for (int k = 0; k < ef->nr_by; k++) {
			struct field *f = &ef->by[i][k];

			err = fields_lookup(&l, ef->by_names[k], user, f, why, sizeof(why));
			if (err == -ENOENT) {
				p_err("%s has no field '%s'; its fields: %s%s", e->name, ef->by_names[k],
				      fields_names(&l, names, sizeof(names)),
				      fields_func_hint(e, ef->by_names[k], why, sizeof(why)));
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
			err = filter_compile_sym(filter, &l, user, ksym_addr, &ks, t, why, sizeof(why));
			if (err) {
				p_err("%s: %s%s", e->name, why, strstr(why, "unknown field") ?
				      fields_func_hint(e, "", names, sizeof(names)) : "");
				break;
			}
		}
	}
	field_list_free(&l);
	ksyms__free(ks);
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

int event_fields_build(const struct probe_events *evs, const char *by, const char *filter,
		       struct event_fields *ef)
{
	return build(evs, by, filter, false, ef);
}

int event_fields_build_at_exit(const struct probe_events *evs, const char *filter,
			       struct event_fields *ef)
{
	return build(evs, NULL, filter, true, ef);
}

int event_fields_fill(const struct event_fields *ef, struct bpf_map *map)
{
	for (int i = 0; i < ef->nr_ev; i++) {
		__u32 key = i;
		int err = bpf_map__update_elem(map, &key, sizeof(key), &ef->tabs[i],
					       sizeof(ef->tabs[i]), BPF_ANY);

		if (err) {
			p_err("cannot fill the field tables: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

void event_fields_free(struct event_fields *ef)
{
	free(ef->tabs);
	free(ef->by);
	memset(ef, 0, sizeof(*ef));
}

__u32 event_fields_key_text(const struct event_fields *ef, const void *key, field_name_fn name,
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
		field_format_value(f, v, str, name, ctx, cols[i], sizeof(cols[i]));
	}
	return idx;
}

int event_fields_configure(const struct event_fields *ef, struct event_fields_rodata rd,
			   __u32 rows_max)
{
	bool rows = ef->nr_by > 0 && rows_max > 0;
	int err;

	/* the same fields at the same places in every event: constants the verifier prunes by */
	*rd.by_fixed = ef->nr_by > 0 && ef->nr_ev > 0;
	*rd.nr_by = ef->nr_by;
	for (int i = 1; ef->nr_by && i < ef->nr_ev; i++)
		if (memcmp(ef->tabs[i].by, ef->tabs[0].by, sizeof(ef->tabs[0].by)))
			*rd.by_fixed = false;
	if (*rd.by_fixed)
		memcpy(rd.by_desc, ef->tabs[0].by, sizeof(ef->tabs[0].by));
	*rd.by_ints = *rd.by_fixed && ef->key_size == 8 + 8 * (unsigned)ef->nr_by;
	/* every program that reads a record has it as its context (perf tracepoint programs);
	 * a filter hands the context's copy to global functions first, after which the verifier
	 * no longer knows it for the context */
	*rd.by_rec_ctx = *rd.by_fixed && !ef->filter;
	*rd.rows_max = rows ? rows_max : 0;
	err = bpf_map__set_max_entries(rd.tabs, ef->nr_ev ?: 1);
	if (!err && rows)
		err = bpf_map__set_key_size(rd.rows, ef->key_size) ?:
		      bpf_map__set_max_entries(rd.rows, rows_max) ?:
		      bpf_map__set_max_entries(rd.taken, rows_max);
	return err;
}

int event_fields_read_rows(const struct event_fields *ef, struct bpf_map *rows, __u32 nr,
			   const char ***keys, char **store)
{
	size_t ksz = ef->key_size;
	char *buf = calloc(nr ?: 1, ksz), *prev = NULL, *k = malloc(ksz);
	const char **by_row = calloc(nr ?: 1, sizeof(*by_row));
	int fd = bpf_map__fd(rows);

	if (!buf || !k || !by_row) {
		free(buf);
		free(k);
		free(by_row);
		return -ENOMEM;
	}
	while (!bpf_map_get_next_key(fd, prev, k)) {
		__u32 row;

		if (!bpf_map_lookup_elem(fd, k, &row) && row < nr) {
			memcpy(buf + row * ksz, k, ksz);
			by_row[row] = buf + row * ksz;
		}
		prev = prev ?: malloc(ksz);
		if (!prev)
			break;
		memcpy(prev, k, ksz);
	}
	free(prev);
	free(k);
	*keys = by_row;
	*store = buf;
	return 0;
}

char *event_fields_label(const struct event_fields *ef, const struct probe_events *evs,
			 const void *key, bool with_event, field_name_fn name, void *ctx, char *buf,
			 size_t size)
{
	char cols[FIELDS_MAX][FIELD_STR_LEN * 2];
	__u32 idx = event_fields_key_text(ef, key, name, ctx, cols);
	size_t off = 0;

	buf[0] = '\0';
	if (with_event && idx < (__u32)evs->nr)
		off = snprintf(buf, size, "%s ", evs->ev[idx].name);
	for (int k = 0; k < ef->nr_by && off < size; k++)
		off += snprintf(buf + off, size - off, "%s%s=%s", k ? "," : "", ef->by_names[k],
				cols[k]);
	return buf;
}

/* Whether any event's --by fields include one of this kind. */
static bool by_has_kind(const struct event_fields *ef, enum field_kind kind)
{
	for (int i = 0; i < ef->nr_ev; i++)
		for (int k = 0; k < ef->nr_by; k++)
			if (ef->by[i][k].kind == kind)
				return true;
	return false;
}

void field_namer_open(struct field_namer *n, const struct event_fields *ef)
{
	*n = (struct field_namer){};
	if (by_has_kind(ef, FIELD_KSYM) && !(n->ksyms = ksyms__load()))
		fprintf(stderr, "bpfprof: kernel functions shown as addresses: cannot read "
			"/proc/kallsyms (%s)\n", strerror(errno));
	if (by_has_kind(ef, FIELD_CGROUP) && !(n->cgroups = cgroup_names__new()))
		fprintf(stderr, "bpfprof: cgroups shown as ids: %s\n",
			errno == ENOENT ? "no cgroup v2 hierarchy is mounted" : strerror(errno));
}

void field_namer_close(struct field_namer *n)
{
	ksyms__free(n->ksyms);
	cgroup_names__free(n->cgroups);
	*n = (struct field_namer){};
}

const char *field_namer_name(const struct field *f, __u64 v, char *buf, size_t size, void *ctx)
{
	const struct field_namer *n = ctx;
	const struct ksym *k;
	const char *path;

	if (f->kind == FIELD_CGROUP) {
		path = n->cgroups ? cgroup_names__get(n->cgroups, v) : NULL;
		if (!path)
			return NULL;
		snprintf(buf, size, "%s", path);
		return buf;
	}
	k = n->ksyms && v ? ksyms__find(n->ksyms, v) : NULL;
	if (!k)
		return NULL;
	if (k->addr == v)
		snprintf(buf, size, "%s", k->name);
	else
		snprintf(buf, size, "%s+0x%llx", k->name, (unsigned long long)(v - k->addr));
	return buf;
}
