// The peers' side of runloop-peers: the same work as our loop's, written in C against each
// library's own API (libuv, sd-event, GLib), and the bare-call floor. Every function runs on
// the calling thread or on threads it starts and joins; none keeps state between calls.
#ifndef CPEERS_H
#define CPEERS_H

#include <stdint.h>

// Which library a function measures.
typedef enum {
  PEER_FLOOR = 0,  // bare epoll_wait and eventfd, no library
  PEER_LIBUV = 1,
  PEER_SDEVENT = 2,
  PEER_GLIB = 3,
} peer_kind;

// Nanoseconds taken by `passes` zero-timeout passes of the peer's loop (one idle descriptor
// or handle registered so that the loop has something to poll), after a warm-up.
uint64_t peers_empty_passes(peer_kind kind, long passes);

// Nanoseconds to schedule `count` one-shot timers `offsets[i]` seconds ahead and then cancel
// them all, storage for each timer allocated and freed as a user of the library would.
// Returns 0 for PEER_FLOOR (the floor has no timers).
uint64_t peers_timer_churn(peer_kind kind, const double *offsets, long count);

// Heap bytes (mallinfo2) per scheduled one-shot timer, with `count` timers scheduled far
// ahead at once.
double peers_timer_memory(peer_kind kind, long count);

// One run of cross-thread ping-pong: two threads, each running the peer's loop, hand the
// ball back and forth `round_trips` times through the library's way of waking another
// thread's loop.
typedef struct {
  uint64_t nanoseconds;      // wall time of the run
  uint64_t cpu_nanoseconds;  // CPU time of the two loop threads (getrusage per thread)
  uint64_t allocations;      // malloc-family calls of the two loop threads
} peers_ping_pong_result;

peers_ping_pong_result peers_ping_pong(peer_kind kind, long round_trips);

// Restricts the calling thread, and the threads it starts afterwards, to `cpu`; -1 lifts the
// restriction (every online CPU). Returns 0 or an errno.
int peers_run_on_cpu(int cpu);

// What the calling thread has used so far: CPU time (getrusage(RUSAGE_THREAD)) and calls to
// the malloc family. The counter is per thread only (no shared cache line that two threads
// handing work back and forth would bounce between CPUs); a cross-thread run adds up the
// usage of its threads.
typedef struct {
  uint64_t cpu_nanoseconds;
  uint64_t allocations;
} peers_thread_usage;

peers_thread_usage peers_thread_usage_now(void);

// Bytes handed out by malloc and not freed (mallinfo2: uordblks + hblkhd, all arenas).
uint64_t peers_heap_bytes_in_use(void);
// Bytes in use now minus `before` (a reading of peers_heap_bytes_in_use), signed: the count
// covers every thread, and one that frees while another measures can make it shrink.
double peers_heap_growth(uint64_t before);

// The versions the library headers were built against, "libuv 1.44.2" style.
const char *peers_version(peer_kind kind);

#endif
