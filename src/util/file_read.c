/* file_read.c: the bounded whole-file read (file_read.h). The buffer starts
 * at the expected size (or 64 KiB) and doubles, never beyond max + 1 bytes
 * (plus the NUL): one byte past the bound is how a larger file is told. */
#include "util/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIRST_CAP ((size_t)64 * 1024)

int sl__file_read_fd(int fd, size_t max, size_t hint, char **out, size_t *len, int *err_no) {
    *out = NULL;
    *len = 0;
    size_t bound = max < SIZE_MAX - 1 ? max + 1 : SIZE_MAX - 1; /* bytes kept at most */
    size_t cap = hint ? hint + 1 : FIRST_CAP, n = 0;
    if (cap > bound) cap = bound;
    char *buf = malloc(cap + 1);
    if (!buf) return SL__FILE_ENOMEM;
    for (;;) {
        if (n == cap) {
            if (cap == bound) break; /* one byte past max: too large */
            size_t ncap = cap > bound / 2 ? bound : 2 * cap;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                return SL__FILE_ENOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            if (err_no) *err_no = errno;
            free(buf);
            return SL__FILE_EIO;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    if (n > max) {
        free(buf);
        return SL__FILE_ETOOLARGE;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return SL__FILE_OK;
}

int sl__file_read(const char *path, size_t max, unsigned flags, char **out, size_t *len,
                  int *err_no) {
    *out = NULL;
    *len = 0;
    bool regular = flags & SL__FILE_REGULAR;
    int fd = open(path, O_RDONLY | O_CLOEXEC | (regular ? O_NONBLOCK : 0));
    if (fd < 0) {
        if (err_no) *err_no = errno;
        return SL__FILE_EOPEN;
    }
    size_t hint = 0;
    if (regular) {
        struct stat st;
        int rc = SL__FILE_OK;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            rc = SL__FILE_ENOTREG;
        else if ((uint64_t)st.st_size > max)
            rc = SL__FILE_ETOOLARGE;
        if (rc != SL__FILE_OK) {
            close(fd);
            return rc;
        }
        hint = (size_t)st.st_size;
    }
    int rc = sl__file_read_fd(fd, max, hint, out, len, err_no);
    close(fd);
    return rc;
}

const char *sl__file_strerror(int rc, int err_no, size_t max, char *out, size_t size) {
    switch (rc) {
    case SL__FILE_EOPEN:
        snprintf(out, size, "cannot open: %s", strerror(err_no));
        break;
    case SL__FILE_ENOTREG:
        snprintf(out, size, "not a regular file");
        break;
    case SL__FILE_ETOOLARGE:
        snprintf(out, size, "larger than %zu bytes: refused", max);
        break;
    case SL__FILE_ENOMEM:
        snprintf(out, size, "out of memory");
        break;
    case SL__FILE_EIO:
        snprintf(out, size, "cannot read: %s", strerror(err_no));
        break;
    default:
        snprintf(out, size, "no error");
        break;
    }
    return out;
}
