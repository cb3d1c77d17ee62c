// Linux facilities that Swift's Glibc module does not expose: epoll, eventfd, timerfd,
// signalfd, gettid. Included the way swift-nio's CNIOLinux does it: a header the Swift
// side imports as a module, with a few inline wrappers for what is a macro in C.
#ifndef CRUNLOOPLINUX_H
#define CRUNLOOPLINUX_H

// No _GNU_SOURCE here: this header is imported next to Glibc, and a header built with a
// different feature set makes clang see two definitions of fd_set and friends. What needs
// GNU extensions lives in shim.c, behind plain declarations.
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "crl_signals.h"

/// The kernel thread id of the calling thread, cached per thread (reset in a forked child).
pid_t crl_current_tid(void);

/// How many forks stand between the process that started the program and this one (0 in
/// that process): incremented in each forked child.
extern uint64_t crl_fork_generation_value;

/// The fork generation (see above), read without a call: every `isCurrent` asks for it.
static inline uint64_t crl_fork_generation(void) {
  return __atomic_load_n(&crl_fork_generation_value, __ATOMIC_RELAXED);
}

/// What the calling thread is doing for the cause-and-effect trace: the span of the call-out
/// it runs (0: none), that call-out's loop (0: none), and the trace id the call-out's cause
/// came with (both 0: none). One per thread; written only while some instrument traces
/// call-outs.
typedef struct {
  uint64_t span;
  uint64_t loop;
  uint64_t trace_high;
  uint64_t trace_low;
} crl_callout_context;

/// The calling thread's call-out context (a thread-local variable, so one call per call-out).
crl_callout_context *crl_current_callout_context(void);

/// A new span id, unique in the process and never 0. Spans come from per-thread blocks
/// of a process-wide counter that starts at a random value, so threads do not contend on
/// one atomic and two processes are unlikely to share ids (W3C span ids should be unique).
uint64_t crl_next_span(void);

/// epoll_event is packed on x86_64, which Swift cannot lay out itself; these accessors
/// keep the Swift side free of layout questions.
static inline uint32_t crl_epoll_event_events(const struct epoll_event *event) {
  return event->events;
}
static inline uint64_t crl_epoll_event_data(const struct epoll_event *event) {
  return event->data.u64;
}
static inline int crl_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
  struct epoll_event event;
  event.events = events;
  event.data.u64 = data;
  return epoll_ctl(epfd, op, fd, &event);
}
static inline size_t crl_epoll_event_size(void) { return sizeof(struct epoll_event); }

/// epoll_wait as the bare system call. glibc's wrapper is a thread-cancellation point: around
/// the call it switches asynchronous cancellation on and off, about 30 instructions a call.
/// A loop's thread is never cancelled (nothing in the framework or in Swift calls
/// pthread_cancel), so the bookkeeping buys nothing here. Where the kernel has epoll_wait
/// (x86_64 among others), that is the call: epoll_pwait with no signal mask does the same
/// work but is 13 to 17 ns slower per call on this project's machines (Performance.md,
/// "epoll_wait, not epoll_pwait"). arm64 has only epoll_pwait. Returns the number of
/// events, or -1 with errno set.
static inline int crl_epoll_wait(int epfd, struct epoll_event *events, int max, int timeout) {
#ifdef SYS_epoll_wait
  return (int)syscall(SYS_epoll_wait, epfd, events, max, timeout);
#else
  return (int)syscall(SYS_epoll_pwait, epfd, events, max, timeout, NULL, sizeof(uint64_t));
#endif
}

/// The number of the system call `crl_epoll_wait` makes, as `/proc/<pid>/task/<tid>/syscall`
/// shows it while a loop sleeps there.
static inline long crl_epoll_wait_system_call(void) {
#ifdef SYS_epoll_wait
  return SYS_epoll_wait;
#else
  return SYS_epoll_pwait;
#endif
}

/// A loop's sleep word (see the Swift side's `Waker`): a counter that a wake-up moves on
/// and the loop sleeps on with `futex`. Swift's `Atomic` does not hand out its address, which
/// the system call needs, so the word's atomics are here. Sequentially consistent, as every
/// access of the waker's state is.
static inline uint32_t crl_sleep_word_load(const uint32_t *word) {
  return __atomic_load_n(word, __ATOMIC_SEQ_CST);
}

/// Sleeps while `*word` still holds `seen` (returns at once when it moved on), until
/// crl_sleep_word_wake, a signal, or a spurious wake-up. No timeout: a sleep with a deadline
/// is made in epoll, whose timerfd stays armed from one sleep to the next, where a futex
/// timeout arms a kernel timer on every sleep (in a C ping-pong on one CPU, 283,000 round
/// trips/s without a timeout, 241,000 with one, 225,000 with eventfd and epoll_wait).
static inline void crl_sleep_word_wait(uint32_t *word, uint32_t seen) {
  (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

/// Moves the word on and wakes the thread sleeping on it, if one is.
static inline void crl_sleep_word_wake(uint32_t *word) {
  __atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
  (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/// SO_PEERCRED of a connected Unix-domain socket (struct ucred needs _GNU_SOURCE, which
/// Swift's Glibc module is built without). Returns 0 or -1 with errno set.
int crl_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// Names the calling thread (pthread_setname_np: at most 15 bytes). Returns 0 or an errno.
int crl_set_thread_name(const char *name);

/// Copies the calling thread's name into `buffer` (pthread_getname_np). Returns 0 or an errno.
int crl_get_thread_name(char *buffer, size_t size);

/// The stack size of the calling thread (pthread_getattr_np), or 0 when unknown.
size_t crl_current_stack_size(void);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC (a GNU extension).
int crl_accept_nonblocking(int fd);

/// How many CPUs the calling thread may run on (sched_getaffinity and CPU_COUNT, which are
/// GNU extensions and macros); 1 when the mask cannot be read.
int crl_allowed_cpu_count(void);

/// The CPU the calling thread is running on (sched_getcpu), or -1 with errno set.
int crl_current_cpu(void);

/// Restricts the calling thread, and the threads it creates from now on, to CPU `cpu`; with
/// -1, allows every configured CPU again. Returns 0, or -1 with errno set.
int crl_run_on_cpu(int cpu);

#endif
