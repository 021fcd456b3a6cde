/* hotcold built without frame pointers, like most distribution binaries: only call-frame
 * tables (.eh_frame) can walk its stacks.  Same shape and usage as hotcold.c. */
// build: -fomit-frame-pointer -momit-leaf-frame-pointer
#include "hotcold.c"
