// Most of the target lives in the header as static inline functions. Here: the thread-id
// cache (one thread-local variable shared by every caller) and what needs _GNU_SOURCE.
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "CRunLoopLinux.h"

static __thread pid_t crl_tid_cache;

pid_t crl_current_tid(void) {
  if (crl_tid_cache == 0) {
    crl_tid_cache = (pid_t)syscall(SYS_gettid);
  }
  return crl_tid_cache;
}

static __thread crl_callout_context crl_context;

crl_callout_context *crl_current_callout_context(void) { return &crl_context; }

// Spans: a thread takes a block of this many ids at a time from the process-wide counter.
#define CRL_SPAN_BLOCK 4096
static _Atomic uint64_t crl_span_counter;
static __thread uint64_t crl_span_next, crl_span_end;

// A random start (the low 32 bits clear, so ids count up readably from there).
static void crl_seed_spans(void) {
  uint32_t seed = 0;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != sizeof seed) {
    seed = (uint32_t)getpid() * 2654435761u;
  }
  if (seed == 0) seed = 1;
  atomic_store_explicit(&crl_span_counter, (uint64_t)seed << 32, memory_order_relaxed);
}

uint64_t crl_next_span(void) {
  if (crl_span_next == crl_span_end) {
    crl_span_next =
        atomic_fetch_add_explicit(&crl_span_counter, CRL_SPAN_BLOCK, memory_order_relaxed);
    crl_span_end = crl_span_next + CRL_SPAN_BLOCK;
  }
  uint64_t span = crl_span_next++;
  // 0 means "no span"; the counter passes it only after wrapping around 2^64.
  return span != 0 ? span : crl_next_span();
}

uint64_t crl_fork_generation_value;

// A forked child is another process: new thread id, new spans (the parent's blocks must
// not be handed out twice), no call-out in progress, one more fork generation.
static void crl_reset_in_child(void) {
  __atomic_add_fetch(&crl_fork_generation_value, 1, __ATOMIC_RELAXED);
  crl_tid_cache = 0;
  crl_seed_spans();
  crl_span_next = crl_span_end = 0;
  crl_context = (crl_callout_context){0, 0, 0, 0};
}

__attribute__((constructor)) static void crl_install_fork_handler(void) {
  crl_seed_spans();
  pthread_atfork(NULL, NULL, crl_reset_in_child);
}

int crl_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
  struct ucred credentials;
  socklen_t length = sizeof(credentials);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
  *pid = credentials.pid;
  *uid = credentials.uid;
  *gid = credentials.gid;
  return 0;
}

int crl_accept_nonblocking(int fd) {
  return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int crl_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }

int crl_get_thread_name(char *buffer, size_t size) {
  return pthread_getname_np(pthread_self(), buffer, size);
}

size_t crl_current_stack_size(void) {
  pthread_attr_t attributes;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
  pthread_attr_getstacksize(&attributes, &size);
  pthread_attr_destroy(&attributes);
  return size;
}

int crl_allowed_cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int count = CPU_COUNT(&set);
  return count > 0 ? count : 1;
}

int crl_current_cpu(void) { return sched_getcpu(); }

int crl_run_on_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    long count = sysconf(_SC_NPROCESSORS_CONF);
    for (long index = 0; index < count && index < CPU_SETSIZE; index++) CPU_SET(index, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  return sched_setaffinity(0, sizeof set, &set);
}
