/* fixedwork built without frame pointers, for the unwinding benchmark (bench/unwind.sh).  Same
 * usage as fixedwork.c. */
// build: -fomit-frame-pointer -momit-leaf-frame-pointer
#include "fixedwork.c"
