// SPDX-License-Identifier: GPL-2.0
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/topui.h"

#define ESC 0x1b
#define CTRL(c) ((c) & 0x1f)

/* The key a complete CSI (ESC [ ... final) or SS3 (ESC O final) sequence names; 0 for others. */
static int sequence_key(const unsigned char *seq, int len)
{
	unsigned char final = seq[len - 1];
	int arg = len > 3 ? atoi((const char *)seq + 2) : 0;

	switch (final) {
	case 'A':
		return TOPK_UP;
	case 'B':
		return TOPK_DOWN;
	case 'H':
		return TOPK_HOME;
	case 'F':
		return TOPK_END;
	case '~':
		return arg == 5 ? TOPK_PGUP : arg == 6 ? TOPK_PGDN :
		       arg == 1 || arg == 7 ? TOPK_HOME : arg == 4 || arg == 8 ? TOPK_END : 0;
	default:
		return 0;
	}
}

int top_keyreader_feed(struct top_keyreader *k, unsigned char c)
{
	if (!k->len) {
		if (c != ESC)
			return c;
		k->seq[k->len++] = c;
		return 0;
	}
	if (k->len == 1) {
		/* ESC and another byte: Alt+key, taken as the key */
		if (c != '[' && c != 'O') {
			k->len = 0;
			return c == ESC ? TOPK_ESC : c;
		}
		k->seq[k->len++] = c;
		return 0;
	}
	k->seq[k->len++] = c;
	/* SS3 ends at its first byte; CSI at a byte from '@' to '~' */
	if ((k->seq[1] == 'O' || (c >= 0x40 && c <= 0x7e)) || k->len == sizeof(k->seq) - 1) {
		int key;

		k->seq[k->len] = 0;
		key = sequence_key(k->seq, k->len);
		k->len = 0;
		return key;
	}
	return 0;
}

int top_keyreader_flush(struct top_keyreader *k)
{
	bool lone_esc = k->len > 0;

	k->len = 0;
	return lone_esc ? TOPK_ESC : 0;
}

void top_ui_clamp(struct top_ui *ui, int nr_rows, int page)
{
	if (ui->selected >= nr_rows)
		ui->selected = nr_rows - 1;
	if (ui->selected < 0)
		ui->selected = 0;
	if (page < 1)
		page = 1;
	if (ui->first > ui->selected)
		ui->first = ui->selected;
	if (ui->selected >= ui->first + page)
		ui->first = ui->selected - page + 1;
	if (ui->first < 0)
		ui->first = 0;
}

/* Enter in the prompt: a number zooms into that process, a name into that command, nothing
 * zooms out. */
static void apply_prompt(struct top_ui *ui)
{
	char *end;
	unsigned long pid;

	memset(&ui->zoom, 0, sizeof(ui->zoom));
	ui->prompt[ui->prompt_len] = 0;
	pid = strtoul(ui->prompt, &end, 10);
	if (ui->prompt_len && !*end && pid && pid <= UINT32_MAX)
		ui->zoom.pid = pid;
	else if (ui->prompt_len)
		snprintf(ui->zoom.comm, sizeof(ui->zoom.comm), "%s", ui->prompt);
	ui->prompting = false;
	ui->selected = ui->first = 0;
}

static int prompt_key(struct top_ui *ui, int key)
{
	if (key == '\r' || key == '\n') {
		apply_prompt(ui);
	} else if (key == TOPK_ESC || key == CTRL('g')) {
		ui->prompting = false;
	} else if (key == 127 || key == CTRL('h')) {
		ui->prompt_len -= ui->prompt_len > 0;
	} else if (key == CTRL('c')) {
		return TOP_ACT_QUIT;
	} else if (key >= 0x20 && key < 0x7f && ui->prompt_len < (int)sizeof(ui->prompt) - 1) {
		ui->prompt[ui->prompt_len++] = key;
	} else {
		return TOP_ACT_NONE;
	}
	ui->prompt[ui->prompt_len] = 0;
	return TOP_ACT_REDRAW;
}

static bool zoomed(const struct top_ui *ui)
{
	return ui->zoom.pid || ui->zoom.comm[0];
}

/* 'P': into the selected row's process, or back out. */
static int zoom_key(struct top_ui *ui, const struct top_ui_ctx *ctx)
{
	if (zoomed(ui)) {
		memset(&ui->zoom, 0, sizeof(ui->zoom));
	} else if (ctx->selected_pid) {
		ui->zoom.pid = ctx->selected_pid;
	} else if (ctx->selected_comm) {
		/* the idle task and kernel threads are pid 0 here: by name, then */
		snprintf(ui->zoom.comm, sizeof(ui->zoom.comm), "%s", ctx->selected_comm);
	} else {
		return TOP_ACT_NONE;
	}
	ui->selected = ui->first = 0;
	return TOP_ACT_REDRAW;
}

static int move_key(struct top_ui *ui, int key, const struct top_ui_ctx *ctx)
{
	int page = ctx->page > 0 ? ctx->page : 1;

	switch (key) {
	case TOPK_UP: case 'k':
		ui->selected--;
		break;
	case TOPK_DOWN: case 'j':
		ui->selected++;
		break;
	case TOPK_PGUP:
		ui->selected -= page;
		break;
	case TOPK_PGDN:
		ui->selected += page;
		break;
	case TOPK_HOME: case 'g':
		ui->selected = 0;
		break;
	case TOPK_END: case 'G':
		ui->selected = ctx->nr_rows - 1;
		break;
	default:
		return TOP_ACT_NONE;
	}
	top_ui_clamp(ui, ctx->nr_rows, page);
	return TOP_ACT_REDRAW;
}

int top_ui_key(struct top_ui *ui, int key, const struct top_ui_ctx *ctx)
{
	if (!key)
		return TOP_ACT_NONE;
	if (ui->prompting)
		return prompt_key(ui, key);
	if (key == 'q' || key == 'Q' || key == CTRL('c'))
		return TOP_ACT_QUIT;
	if (ui->help) {
		/* any key closes the help, as in perf top */
		ui->help = false;
		return TOP_ACT_REDRAW;
	}
	switch (key) {
	case ' ': case 'p':
		ui->paused = !ui->paused;
		return TOP_ACT_REDRAW;
	case 'c':
		ui->children = !ui->children;
		return TOP_ACT_REDRAW;
	case 'z':
		return TOP_ACT_RESET | TOP_ACT_REDRAW;
	case 'a':
		ui->mode = (ui->mode + 1) % TOP_NR_MODES;
		return TOP_ACT_REDRAW;
	case 'P':
		return zoom_key(ui, ctx);
	case '/':
		ui->prompting = true;
		ui->prompt_len = 0;
		ui->prompt[0] = 0;
		return TOP_ACT_REDRAW;
	case TOPK_ESC:
		if (!zoomed(ui))
			return TOP_ACT_NONE;
		memset(&ui->zoom, 0, sizeof(ui->zoom));
		return TOP_ACT_REDRAW;
	case 'h': case '?':
		ui->help = true;
		return TOP_ACT_REDRAW;
	case CTRL('l'):
		return TOP_ACT_REDRAW;
	default:
		return move_key(ui, key, ctx);
	}
}

const char top_ui_help[] =
	"bpfprof top: keys\n"
	"\n"
	"  q, Ctrl-C     quit\n"
	"  space, p      pause / resume the screen (sampling goes on)\n"
	"  c             sort by Children / by Self\n"
	"  a             counts: decaying (7/8 a refresh, as perf top) -> accumulating\n"
	"                (since the start or the last z) -> per refresh (as perf top -z)\n"
	"  z             reset: zero every count now\n"
	"  Up/Down, j/k  move the cursor; PgUp/PgDn, Home/End (g/G) jump\n"
	"  P             zoom into the process of the cursor's row; P or Esc again: all\n"
	"  /             zoom into a PID or a command name (Enter; empty: all; Esc: cancel)\n"
	"  Ctrl-L        redraw\n"
	"  h, ?          this help (any key closes it)\n";
