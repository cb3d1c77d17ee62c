// Allocation counting for runloop-bench: the bench executable defines malloc and friends,
// which the dynamic linker binds ahead of glibc's for every library in the process. Each
// call bumps a per-thread counter, then forwards to glibc's own entry points.
#ifndef CBENCH_SUPPORT_H
#define CBENCH_SUPPORT_H

#include <stdint.h>

// Allocations (malloc, calloc, realloc, memalign family) made by the calling thread so far.
uint64_t cbench_thread_allocations(void);
// Allocations made by every thread so far.
uint64_t cbench_process_allocations(void);

// Bytes handed out by malloc and not freed (mallinfo2: uordblks + hblkhd, all arenas).
uint64_t cbench_heap_bytes_in_use(void);

#endif
