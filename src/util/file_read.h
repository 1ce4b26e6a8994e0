/* file_read.h: a bounded whole-file read, for every file sluice and sluiced
 * read whole (the config, key files, rule files, traces, request bodies).
 * It reads at most one byte more than allowed, so it works for pipes and
 * /dev/stdin too and never trusts a size reported in advance. */
#ifndef SLUICE_UTIL_FILE_READ_H
#define SLUICE_UTIL_FILE_READ_H

#include <stddef.h>

/* Flags of sl__file_read. */
#define SL__FILE_REGULAR                                                                           \
    1u /* refuse anything but a regular file; open with                                            \
          O_NONBLOCK, so that a FIFO named by mistake                                              \
          never blocks (a reload, say) */

/* What went wrong (0: nothing). The caller words the message. */
enum {
    SL__FILE_OK = 0,
    SL__FILE_EOPEN = -1,     /* open(2) failed: *err_no */
    SL__FILE_ENOTREG = -2,   /* not a regular file (SL__FILE_REGULAR), or fstat failed */
    SL__FILE_ETOOLARGE = -3, /* more than max bytes */
    SL__FILE_ENOMEM = -4,
    SL__FILE_EIO = -5 /* read(2) failed: *err_no */
};

/* Reads all of `path`, at most `max` bytes, into a new buffer: *out (len
 * bytes and a NUL after them; the caller frees it) and *len. Returns 0, or
 * a negative SL__FILE_E* code with *out NULL and, for EOPEN and EIO, errno
 * in *err_no (err_no may be NULL). With SL__FILE_REGULAR a file whose size
 * is already above max is refused before anything is read. */
int sl__file_read(const char *path, size_t max, unsigned flags, char **out, size_t *len,
                  int *err_no);

/* The same from an open descriptor, read to its end (fd stays open).
 * `hint` is the expected size (0: unknown), to allocate once. */
int sl__file_read_fd(int fd, size_t max, size_t hint, char **out, size_t *len, int *err_no);

/* The message of code rc for the loaders of sluiced (config, key and rule
 * files): "cannot open: <strerror>", "not a regular file", "larger than
 * <max> bytes: refused", "out of memory", "cannot read: <strerror>". Returns
 * out. */
const char *sl__file_strerror(int rc, int err_no, size_t max, char *out, size_t size);

#endif
