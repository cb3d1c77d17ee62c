// The allocation counter. The executable defines the malloc family, so the dynamic linker
// binds every library of the process (the Swift runtime, NIO, libuv, GLib, libsystemd) to
// these; each counts the call and forwards to glibc's exported __libc_* entry points, which
// needs no dlsym (dlsym itself allocates) and so works from the first allocation on.
#include "CPeers.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static __thread uint64_t calls_of_this_thread;

static inline void counted(void) { calls_of_this_thread++; }

uint64_t peers_thread_allocations(void) { return calls_of_this_thread; }

uint64_t peers_heap_bytes_in_use(void) {
  struct mallinfo2 info = mallinfo2();
  return (uint64_t)(info.uordblks + info.hblkhd);
}

double peers_heap_growth(uint64_t before) {
  return (double)peers_heap_bytes_in_use() - (double)before;
}

void *malloc(size_t size) {
  counted();
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  counted();
  return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
  counted();
  return __libc_realloc(pointer, size);
}

void free(void *pointer) { __libc_free(pointer); }

void *memalign(size_t alignment, size_t size) {
  counted();
  return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
  counted();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
  counted();
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return ENOMEM;
  *result = pointer;
  return 0;
}
