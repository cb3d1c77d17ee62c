// GLib 2.x (Debian's libglib2.0-dev): GMainContext and its sources, for the peers' benchmarks.
#include <glib.h>
#include <glib-unix.h>
