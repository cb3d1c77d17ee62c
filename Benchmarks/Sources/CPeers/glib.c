// GLib's side: g_main_context_iteration(ctx, FALSE) for a pass, g_timeout_source_new for
// timers, g_main_context_invoke (its way to run a function on another thread's context) for
// ping-pong. Each loop has a context of its own, owned by the thread that iterates it.
#include "internal.h"

#include <glib-unix.h>
#include <glib.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

static gboolean glib_ignore_fd(gint fd, GIOCondition condition, gpointer context) {
  (void)fd, (void)condition, (void)context;
  return G_SOURCE_CONTINUE;
}

static gboolean glib_ignore_timeout(gpointer context) {
  (void)context;
  return G_SOURCE_REMOVE;
}

uint64_t glib_empty_passes(long passes) {
  GMainContext *context = g_main_context_new();
  g_main_context_push_thread_default(context);
  int idle = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  GSource *source = g_unix_fd_source_new(idle, G_IO_IN);
  g_source_set_callback(source, (GSourceFunc)(void (*)(void))glib_ignore_fd, NULL, NULL);
  g_source_attach(source, context);
  for (long index = 0; index < 1000; index++) g_main_context_iteration(context, FALSE);
  uint64_t start = peers_now();
  for (long index = 0; index < passes; index++) g_main_context_iteration(context, FALSE);
  uint64_t elapsed = peers_now() - start;
  g_source_destroy(source);
  g_source_unref(source);
  g_main_context_pop_thread_default(context);
  g_main_context_unref(context);
  close(idle);
  return elapsed;
}

// The context is acquired by this thread, as while it runs, so attaching a source does not
// wake it (as adding a timer to our loop from its own thread does not).
static GMainContext *glib_owned_context(void) {
  GMainContext *context = g_main_context_new();
  g_main_context_push_thread_default(context);
  g_main_context_acquire(context);
  return context;
}

static void glib_release_context(GMainContext *context) {
  g_main_context_release(context);
  g_main_context_pop_thread_default(context);
  g_main_context_unref(context);
}

static GSource *glib_timeout(GMainContext *context, double seconds) {
  GSource *source = g_timeout_source_new((guint)(seconds * 1000));
  g_source_set_callback(source, glib_ignore_timeout, NULL, NULL);
  g_source_attach(source, context);
  return source;
}

uint64_t glib_timer_churn(const double *offsets, long count) {
  GMainContext *context = glib_owned_context();
  GSource **timers = malloc(sizeof(GSource *) * (size_t)count);
  uint64_t start = peers_now();
  for (long index = 0; index < count; index++) timers[index] = glib_timeout(context, offsets[index]);
  for (long index = 0; index < count; index++) {
    g_source_destroy(timers[index]);
    g_source_unref(timers[index]);
  }
  uint64_t elapsed = peers_now() - start;
  free(timers);
  glib_release_context(context);
  return elapsed;
}

double glib_timer_memory(long count) {
  GMainContext *context = glib_owned_context();
  GSource *warm = glib_timeout(context, 7200);
  GSource **timers = malloc(sizeof(GSource *) * (size_t)count);
  uint64_t before = peers_heap_bytes_in_use();
  for (long index = 0; index < count; index++) {
    timers[index] = glib_timeout(context, 3600 + (double)index);
  }
  double per_timer = peers_heap_growth(before) / (double)count;
  for (long index = 0; index < count; index++) {
    g_source_destroy(timers[index]);
    g_source_unref(timers[index]);
  }
  g_source_destroy(warm);
  g_source_unref(warm);
  free(timers);
  glib_release_context(context);
  return per_timer;
}

typedef struct glib_side {
  GMainContext *context;
  struct glib_side *other;
  long remaining;
  int finished;  // written and read on this side's thread only
  peers_thread_usage used;
} glib_side;

static gboolean glib_ping_arrived(gpointer context);
static gboolean glib_pong_arrived(gpointer context);

static gboolean glib_stop(gpointer context) {
  glib_side *side = context;
  side->finished = 1;
  return G_SOURCE_REMOVE;
}

static gboolean glib_ping_arrived(gpointer context) {
  glib_side *side = context;
  if (--side->remaining == 0) {
    side->finished = 1;
    g_main_context_invoke(side->other->context, glib_stop, side->other);
    return G_SOURCE_REMOVE;
  }
  g_main_context_invoke(side->other->context, glib_pong_arrived, side->other);
  return G_SOURCE_REMOVE;
}

static gboolean glib_pong_arrived(gpointer context) {
  glib_side *side = context;
  g_main_context_invoke(side->other->context, glib_ping_arrived, side->other);
  return G_SOURCE_REMOVE;
}

static void *glib_side_run(void *context) {
  glib_side *side = context;
  peers_thread_usage start = peers_thread_usage_now();
  g_main_context_push_thread_default(side->context);
  while (!side->finished) g_main_context_iteration(side->context, TRUE);
  g_main_context_pop_thread_default(side->context);
  side->used = peers_usage_since(start);
  return NULL;
}

peers_ping_pong_result glib_ping_pong(long round_trips) {
  glib_side a = {.remaining = round_trips};
  glib_side b = {0};
  a.other = &b;
  b.other = &a;
  a.context = g_main_context_new();
  b.context = g_main_context_new();
  uint64_t start = peers_now();
  pthread_t ping, pong;
  peers_start_thread(&pong, glib_side_run, &b);
  peers_start_thread(&ping, glib_side_run, &a);
  g_main_context_invoke(b.context, glib_pong_arrived, &b);
  pthread_join(ping, NULL);
  uint64_t elapsed = peers_now() - start;
  pthread_join(pong, NULL);
  peers_ping_pong_result result = peers_result(elapsed, a.used, b.used);
  g_main_context_unref(a.context);
  g_main_context_unref(b.context);
  return result;
}
