// The part of libsystemd the journald sink uses: sd_journal_sendv.
#ifndef C_SYSTEMD_JOURNAL_SHIM_H
#define C_SYSTEMD_JOURNAL_SHIM_H
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#endif
