// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "core/terminal.h"

#define ALT_SCREEN_ON "\x1b[?1049h\x1b[H\x1b[2J\x1b[?25l"
#define ALT_SCREEN_OFF "\x1b[?25h\x1b[?1049l"

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static struct {
	volatile sig_atomic_t entered;
	int in_fd, out_fd;
	bool raw;           /* in_fd's settings changed */
	int in_flags;       /* in_fd's file status flags before O_NONBLOCK */
	struct termios saved;
	struct sigaction old_winch;
	struct sigaction old_crash[sizeof(crash_signals) / sizeof(crash_signals[0])];
} term = { .in_fd = -1, .out_fd = -1 };

static volatile sig_atomic_t resized;

static void write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= n;
	}
}

/* Async-signal-safe: write() and tcsetattr() only. */
static void restore(void)
{
	if (!term.entered)
		return;
	term.entered = 0;
	write_all(term.out_fd, ALT_SCREEN_OFF, sizeof(ALT_SCREEN_OFF) - 1);
	if (term.raw) {
		tcsetattr(term.in_fd, TCSAFLUSH, &term.saved);
		fcntl(term.in_fd, F_SETFL, term.in_flags);
	}
}

/* A crash leaves the terminal as it found it, then dies of the same signal (SA_RESETHAND made
 * the action the default again). */
static void on_crash(int sig)
{
	int saved = errno;

	restore();
	errno = saved;
	raise(sig);
}

static void on_winch(int sig)
{
	resized = 1;
}

static void install_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_RESETHAND | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &sa, &term.old_crash[i]);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, &term.old_winch);
}

static void remove_handlers(void)
{
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &term.old_crash[i], NULL);
	sigaction(SIGWINCH, &term.old_winch, NULL);
}

/* Keys one at a time, unechoed, Ctrl-C and Ctrl-Z as keys (a stopped full-screen view would
 * leave the terminal raw); output untouched, so "\n" still starts a line. */
static int make_raw(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &term.saved))
		return -errno;
	t = term.saved;
	t.c_lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= ~(IXON | ICRNL | INLCR);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	term.in_flags = fcntl(fd, F_GETFL);
	if (term.in_flags < 0 || tcsetattr(fd, TCSANOW, &t))
		return -errno;
	if (fcntl(fd, F_SETFL, term.in_flags | O_NONBLOCK)) {
		int err = -errno;

		tcsetattr(fd, TCSANOW, &term.saved);
		return err;
	}
	term.raw = true;
	return 0;
}

static void leave_at_exit(void)
{
	term_leave();
}

int term_enter(int in_fd, int out_fd)
{
	static bool at_exit;
	int err;

	if (term.entered)
		return 0;
	term.in_fd = in_fd;
	term.out_fd = out_fd;
	term.raw = false;
	if (in_fd >= 0 && isatty(in_fd)) {
		err = make_raw(in_fd);
		if (err)
			return err;
	}
	if (!at_exit)
		at_exit = !atexit(leave_at_exit);
	install_handlers();
	term.entered = 1;
	write_all(out_fd, ALT_SCREEN_ON, sizeof(ALT_SCREEN_ON) - 1);
	return 0;
}

void term_leave(void)
{
	if (!term.entered)
		return;
	restore();
	remove_handlers();
}

void term_size(int *rows, int *cols)
{
	struct winsize ws = {};

	if (term.out_fd < 0 || ioctl(term.out_fd, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col)
		ws.ws_row = 24, ws.ws_col = 80;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
}

bool term_resized(void)
{
	bool r = resized;

	resized = 0;
	return r;
}

int term_read(unsigned char *buf, size_t size)
{
	ssize_t n;

	if (!term.entered || !term.raw)
		return 0;
	n = read(term.in_fd, buf, size);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	return n;
}

int term_draw(const char *lines, size_t len)
{
	char *frame = malloc(len * 4 + 64), *p;
	const char *end = lines + len;

	if (!frame)
		return -ENOMEM;
	p = frame;
	p = stpcpy(p, "\x1b[H");
	while (lines < end) {
		const char *nl = memchr(lines, '\n', end - lines);
		size_t n = (nl ? nl : end) - lines;

		memcpy(p, lines, n);
		p += n;
		/* the rest of the old line goes; no newline after the last, which would scroll */
		p = stpcpy(p, "\x1b[K");
		lines += n + (nl != NULL);
		if (nl && lines < end)
			*p++ = '\n';
	}
	p = stpcpy(p, "\x1b[J");
	write_all(term.out_fd, frame, p - frame);
	free(frame);
	return 0;
}
