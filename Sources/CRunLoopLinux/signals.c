// The signal handler of crl_signals.h. The handler only loads atomics, calls write(2) and
// restores errno: all async-signal-safe. The attach and detach side takes a mutex (never the
// handler) and, before a descriptor may be closed, waits until no handler that could have
// seen it is still running.
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "crl_signals.h"

// Each slot holds a descriptor plus one, so that the zero-initialised table means "empty".
static int crl_slots[NSIG][CRL_SIGNAL_ATTACH_LIMIT];
static int crl_attached[NSIG];
// The disposition our handler replaced, per signal; the handler chains to it when it is a
// function. Written only while our handler is not installed for that signal and no handler
// of ours runs.
static struct sigaction crl_previous[NSIG];
// Handlers (and forwards) between their first look at the slots and their last.
static int crl_in_handler;
static uint64_t crl_lost;
static pthread_mutex_t crl_lock = PTHREAD_MUTEX_INITIALIZER;

static void crl_write_records(int signal, int32_t pid, uint32_t uid, int except) {
  crl_signal_record record = {signal, pid, uid, 0};
  for (int index = 0; index < CRL_SIGNAL_ATTACH_LIMIT; index++) {
    int slot = __atomic_load_n(&crl_slots[signal][index], __ATOMIC_SEQ_CST);
    if (slot == 0 || slot == except + 1) continue;
    if (write(slot - 1, &record, sizeof record) != (ssize_t)sizeof record) {
      __atomic_add_fetch(&crl_lost, 1, __ATOMIC_RELAXED);
    }
  }
}

static void crl_handler(int signal, siginfo_t *info, void *context) {
  int saved = errno;
  __atomic_add_fetch(&crl_in_handler, 1, __ATOMIC_SEQ_CST);
  crl_write_records(signal, info ? info->si_pid : 0, info ? info->si_uid : 0, -1);
  // A copy, taken while counted: the previous disposition is only rewritten once no handler
  // of ours runs.
  struct sigaction previous = crl_previous[signal];
  __atomic_sub_fetch(&crl_in_handler, 1, __ATOMIC_SEQ_CST);
  // A default or ignoring disposition is what the sources take over: only a function is
  // called.
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
  } else if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(signal, info, context);
  } else {
    previous.sa_handler(signal);
  }
  errno = saved;
}

static void crl_wait_for_handlers(void) {
  while (__atomic_load_n(&crl_in_handler, __ATOMIC_SEQ_CST) != 0) sched_yield();
}

static int crl_is_ours(const struct sigaction *action) {
  return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == crl_handler;
}

int crl_signal_handler_is_installed(int signal) {
  if (signal <= 0 || signal >= NSIG) return 0;
  struct sigaction current;
  if (sigaction(signal, NULL, &current) != 0) return 0;
  return crl_is_ours(&current);
}

// Installs the handler for `signal` unless it is the current one, keeping what it replaces.
static int crl_install(int signal) {
  struct sigaction current;
  if (sigaction(signal, NULL, &current) != 0) return -1;
  if (crl_is_ours(&current)) return 0;
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = crl_handler;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  // Our handler is not installed, so none of ours starts; one still running finishes first.
  crl_wait_for_handlers();
  crl_previous[signal] = current;
  return sigaction(signal, &ours, NULL);
}

int crl_signal_attach(int signal, int descriptor) {
  if (signal <= 0 || signal >= NSIG || signal == SIGKILL || signal == SIGSTOP || descriptor < 0) {
    errno = EINVAL;
    return -1;
  }
  pthread_mutex_lock(&crl_lock);
  int free_index = -1;
  for (int index = 0; index < CRL_SIGNAL_ATTACH_LIMIT && free_index < 0; index++) {
    if (crl_slots[signal][index] == 0) free_index = index;
  }
  if (free_index < 0) {
    pthread_mutex_unlock(&crl_lock);
    errno = ENOSPC;
    return -1;
  }
  if (crl_install(signal) != 0) {
    int code = errno;
    pthread_mutex_unlock(&crl_lock);
    errno = code;
    return -1;
  }
  __atomic_store_n(&crl_slots[signal][free_index], descriptor + 1, __ATOMIC_SEQ_CST);
  crl_attached[signal] += 1;
  pthread_mutex_unlock(&crl_lock);
  return 0;
}

void crl_signal_detach(int signal, int descriptor) {
  if (signal <= 0 || signal >= NSIG) return;
  pthread_mutex_lock(&crl_lock);
  int found = 0;
  for (int index = 0; index < CRL_SIGNAL_ATTACH_LIMIT && !found; index++) {
    if (crl_slots[signal][index] == descriptor + 1) {
      __atomic_store_n(&crl_slots[signal][index], 0, __ATOMIC_SEQ_CST);
      found = 1;
    }
  }
  if (found) {
    crl_attached[signal] -= 1;
    if (crl_attached[signal] == 0) {
      struct sigaction current;
      if (sigaction(signal, NULL, &current) == 0 && crl_is_ours(&current)) {
        sigaction(signal, &crl_previous[signal], NULL);
      }
    }
  }
  // A handler that loaded the slot before it was cleared may still be writing to it.
  crl_wait_for_handlers();
  pthread_mutex_unlock(&crl_lock);
}

void crl_signal_forward(int signal, int32_t sender_pid, uint32_t sender_uid, int except) {
  if (signal <= 0 || signal >= NSIG) return;
  __atomic_add_fetch(&crl_in_handler, 1, __ATOMIC_SEQ_CST);
  crl_write_records(signal, sender_pid, sender_uid, except);
  __atomic_sub_fetch(&crl_in_handler, 1, __ATOMIC_SEQ_CST);
}

uint64_t crl_signal_lost_records(void) { return __atomic_load_n(&crl_lost, __ATOMIC_RELAXED); }

int crl_nonblocking_pipe(int descriptors[2]) { return pipe2(descriptors, O_NONBLOCK | O_CLOEXEC); }

int crl_signal_thread(pid_t pid, pid_t tid, int signal) {
  return (int)syscall(SYS_tgkill, pid, tid, signal);
}
