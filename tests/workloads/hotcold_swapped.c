/* hotcold with the work swapped: hot_b does twice the work of hot_a (1:2 where hotcold is 2:1),
 * the "after" of a change for bpfprof diff.  Same shape and usage as hotcold.c. */
// build: -DHOT_A_ITERATIONS=1000000 -DHOT_B_ITERATIONS=2000000
#include "hotcold.c"
