// sd-event, libsystemd's event loop (Debian's libsystemd-dev), for the peers' benchmarks.
#include <systemd/sd-event.h>
