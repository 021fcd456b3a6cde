/* bpfprof top's interactive view as a state machine: terminal bytes in, keys out (the
 * arrows' escape sequences decoded), and keys applied to the view's state (pause, sort, mode,
 * zoom, cursor, help, the zoom prompt).  Pure: the terminal and the table are the caller's;
 * unit-tested. */
#ifndef BPFPROF_TOPUI_H
#define BPFPROF_TOPUI_H
#include <stdbool.h>
#include "out/toptable.h"

/* Keys beyond the bytes 0-255. */
enum {
	TOPK_UP = 0x100,
	TOPK_DOWN,
	TOPK_PGUP,
	TOPK_PGDN,
	TOPK_HOME,
	TOPK_END,
	TOPK_ESC,
};

/* The bytes of an escape sequence read so far. */
struct top_keyreader {
	unsigned char seq[8];
	int len;
};

/* One byte in: a key (a byte, or a TOPK_ value), or 0 while a sequence is incomplete. */
int top_keyreader_feed(struct top_keyreader *k, unsigned char c);
/* No more bytes waiting: an escape sequence cut short was the Escape key alone.  The key or 0. */
int top_keyreader_flush(struct top_keyreader *k);

struct top_ui {
	bool paused;        /* the screen is not redrawn at refreshes (counting goes on) */
	bool children;      /* sorted by Children, else by Self */
	bool help;          /* the help screen is shown */
	enum top_mode mode;
	struct top_zoom zoom;
	int selected;       /* the cursor's row */
	int first;          /* the first row on the screen */
	bool prompting;     /* '/' was typed: a pid or command is being entered */
	char prompt[16];
	int prompt_len;
};

/* What the table looks like now: what the cursor and 'P' need. */
struct top_ui_ctx {
	int nr_rows;        /* rows in the table */
	int page;           /* rows the screen shows */
	__u32 selected_pid; /* the selected row's main process (0: none) */
	const char *selected_comm;
};

enum top_action {
	TOP_ACT_NONE = 0,
	TOP_ACT_REDRAW = 1 << 0,
	TOP_ACT_QUIT = 1 << 1,
	TOP_ACT_RESET = 1 << 2, /* forget the counts ('z') */
};

/* Applies one key; returns the enum top_action flags to act on. */
int top_ui_key(struct top_ui *ui, int key, const struct top_ui_ctx *ctx);
/* Keeps the cursor within nr_rows and on a screen of `page` rows (after the table changed). */
void top_ui_clamp(struct top_ui *ui, int nr_rows, int page);

/* The help screen's lines. */
extern const char top_ui_help[];
#endif
