/* The terminal of a full-screen view (top): keys read raw, the alternate screen, the window's
 * size, and their undoing on every way out: the normal end, SIGINT/SIGTERM (the runner ends
 * the run, the command leaves the screen), exit(), and crashes (SIGSEGV, SIGABRT... restore
 * the terminal, then die of the same signal). */
#ifndef BPFPROF_TERMINAL_H
#define BPFPROF_TERMINAL_H
#include <stdbool.h>
#include <stddef.h>

/* Enters the alternate screen on out_fd (a terminal), and raw, non-blocking key input on in_fd
 * when that is a terminal too (-1: no keys; Ctrl-C then still ends the run as a signal).  0 or
 * -errno. */
int term_enter(int in_fd, int out_fd);
/* Back to the screen and the terminal settings found; does nothing when not entered.  Safe to
 * call more than once. */
void term_leave(void);
/* The window's size; 24 x 80 when the terminal does not say. */
void term_size(int *rows, int *cols);
/* True once after each SIGWINCH. */
bool term_resized(void);
/* Reads the keys waiting (never blocks): bytes read, 0 for none, or -errno. */
int term_read(unsigned char *buf, size_t size);
/* Writes a whole frame: from the top-left corner, each line cleared to its end, nothing left
 * below.  lines: "\n"-separated.  0 or -errno. */
int term_draw(const char *lines, size_t len);
#endif
