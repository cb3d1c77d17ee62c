// A malloc counter for runloop-bench. Why not ordo-one/malloc-interposer: it needs the
// package-benchmark harness and counts for the whole process only; the bench needs the
// count of ONE thread (the loop thread) while other threads allocate freely. glibc keeps
// exporting its real allocator as __libc_malloc & co., so forwarding needs no dlsym (which
// itself allocates) and works from the first allocation of the process.
#include "CBenchSupport.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static __thread uint64_t thread_count;
static uint64_t process_count;

static inline void count_one(void) {
  thread_count++;
  __atomic_fetch_add(&process_count, 1, __ATOMIC_RELAXED);
}

uint64_t cbench_thread_allocations(void) { return thread_count; }
uint64_t cbench_process_allocations(void) {
  return __atomic_load_n(&process_count, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
  count_one();
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  count_one();
  return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
  count_one();
  return __libc_realloc(pointer, size);
}

void free(void *pointer) { __libc_free(pointer); }

void *memalign(size_t alignment, size_t size) {
  count_one();
  return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
  count_one();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  count_one();
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return ENOMEM;
  *result = pointer;
  return 0;
}

uint64_t cbench_heap_bytes_in_use(void) {
  struct mallinfo2 info = mallinfo2();
  return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}
