// Most of the target lives in the header as static inline functions. The thread-id cache
// is here because it needs one thread-local variable shared by every caller.
#include "CRunLoopLinux.h"

static __thread pid_t crl_tid_cache;

pid_t crl_current_tid(void) {
  if (crl_tid_cache == 0) {
    crl_tid_cache = (pid_t)syscall(SYS_gettid);
  }
  return crl_tid_cache;
}

static void crl_reset_tid_cache(void) { crl_tid_cache = 0; }

__attribute__((constructor)) static void crl_install_fork_handler(void) {
  pthread_atfork(NULL, NULL, crl_reset_tid_cache);
}
