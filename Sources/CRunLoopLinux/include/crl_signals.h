// The signal handler behind RunLoopPorts' SignalSource: a sigaction handler that writes each
// signal it catches to the descriptors attached for that signal (libuv's approach), so that a
// signal reaches its sources whatever the masks of the process's threads.
#ifndef CRL_SIGNALS_H
#define CRL_SIGNALS_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/// What the handler writes to each attached descriptor for one signal: 16 bytes, less than
/// PIPE_BUF, so a write to a pipe is whole or not at all.
typedef struct {
  int32_t signal;
  int32_t sender_pid;
  uint32_t sender_uid;
  int32_t reserved;
} crl_signal_record;

/// The most descriptors that can be attached to one signal at a time.
#define CRL_SIGNAL_ATTACH_LIMIT 64

/// Attaches `descriptor` (a non-blocking pipe's write end) to `signal`. The first attachment
/// of a signal installs the handler and keeps the disposition it replaces; an attachment
/// that finds another handler installed in place of ours (a library installed its own
/// since) installs ours again and chains to that one. Returns 0, or -1 with errno set:
/// EINVAL for a signal that cannot be caught, ENOSPC when the signal has
/// CRL_SIGNAL_ATTACH_LIMIT descriptors, or what sigaction sets.
int crl_signal_attach(int signal, int descriptor);

/// Detaches `descriptor` from `signal`; once this returns, no handler writes to it, so it
/// may be closed. The last detachment of a signal puts back the disposition the handler
/// replaced, unless another handler has replaced ours since (that one stays).
void crl_signal_detach(int signal, int descriptor);

/// Writes a record to every descriptor attached to `signal` but `except` (-1: none), as the
/// handler does: for a signal read from a signalfd (one that was blocked, so no handler ran)
/// by the source that attached `except`, which handles it itself.
void crl_signal_forward(int signal, int32_t sender_pid, uint32_t sender_uid, int except);

/// Whether the calling process's handler for `signal` is this file's.
int crl_signal_handler_is_installed(int signal);

/// How many records the handler could not write since the process started (a full pipe).
uint64_t crl_signal_lost_records(void);

/// A pipe with both ends non-blocking and close-on-exec (pipe2 is a GNU extension). Returns 0
/// or -1 with errno set.
int crl_nonblocking_pipe(int descriptors[2]);

/// Sends `signal` to thread `tid` of process `pid` (tgkill). Returns 0 or -1 with errno set.
int crl_signal_thread(pid_t pid, pid_t tid, int signal);

#endif
