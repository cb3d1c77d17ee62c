// The one libsystemd function the journald sink uses. Declared here instead of including
// <systemd/sd-journal.h>, whose system headers (sys/uio.h, sys/select.h) clash in Swift's
// module cache with the Glibc module and with CRunLoopLinux's _GNU_SOURCE view of them.
// The declaration is libsystemd's own (sd-journal.h): int sd_journal_sendv(const struct
// iovec *iov, int n).
#ifndef C_SYSTEMD_JOURNAL_SHIM_H
#define C_SYSTEMD_JOURNAL_SHIM_H

struct iovec;
extern int sd_journal_sendv(const struct iovec *iov, int n);

/// sd_journal_sendv over an untyped array of `struct iovec`: 0 or a negative errno.
static inline int csj_journal_sendv(const void *iov, int n) {
  return sd_journal_sendv((const struct iovec *)iov, n);
}

#endif
