/* test_file_read.c: the bounded whole-file read (src/util/file_read.c): a
 * file of exactly max bytes is read and one of max + 1 refused (whether its
 * size is known in advance or not), the buffer ends with a NUL, pipes are
 * read to their end, and SL__FILE_REGULAR refuses a directory and a FIFO
 * without blocking on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file_read.h"

static char dir[64];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sluice_file_read.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes n bytes of 'x' to dir/name and returns the path (static). */
static const char *file_of(const char *name, size_t n) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) fputc('x', f);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void test_bounds(void **state) {
    (void)state;
    char *buf;
    size_t len;
    for (unsigned flags = 0; flags <= SL__FILE_REGULAR; flags++) {
        const char *p = file_of("exact", 100000); /* more than the first buffer */
        assert_int_equal(sl__file_read(p, 100000, flags, &buf, &len, NULL), SL__FILE_OK);
        assert_int_equal(len, 100000);
        assert_int_equal(buf[len], '\0');
        assert_int_equal(buf[len - 1], 'x');
        free(buf);
        p = file_of("over", 100001);
        assert_int_equal(sl__file_read(p, 100000, flags, &buf, &len, NULL), SL__FILE_ETOOLARGE);
        assert_null(buf);
        p = file_of("empty", 0);
        assert_int_equal(sl__file_read(p, 10, flags, &buf, &len, NULL), SL__FILE_OK);
        assert_int_equal(len, 0);
        assert_string_equal(buf, "");
        free(buf);
    }
}

static void test_errors(void **state) {
    (void)state;
    char *buf, path[128], msg[160];
    size_t len;
    int err_no = 0;
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(sl__file_read(path, 10, 0, &buf, &len, &err_no), SL__FILE_EOPEN);
    assert_int_equal(err_no, ENOENT);
    assert_string_equal(sl__file_strerror(SL__FILE_EOPEN, err_no, 10, msg, sizeof msg),
                        "cannot open: No such file or directory");
    /* a directory: a read error without the flag, refused with it */
    assert_int_equal(sl__file_read(dir, 10, 0, &buf, &len, &err_no), SL__FILE_EIO);
    assert_int_equal(err_no, EISDIR);
    assert_int_equal(sl__file_read(dir, 10, SL__FILE_REGULAR, &buf, &len, NULL), SL__FILE_ENOTREG);
    /* a FIFO with no writer: refused at once, never waited on */
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(sl__file_read(path, 10, SL__FILE_REGULAR, &buf, &len, NULL), SL__FILE_ENOTREG);
    assert_string_equal(sl__file_strerror(SL__FILE_ENOTREG, 0, 10, msg, sizeof msg),
                        "not a regular file");
    assert_string_equal(sl__file_strerror(SL__FILE_ETOOLARGE, 0, 4194304, msg, sizeof msg),
                        "larger than 4194304 bytes: refused");
}

static void test_pipe(void **state) {
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "hello", 5), 5);
    close(fds[1]);
    char *buf;
    size_t len;
    assert_int_equal(sl__file_read_fd(fds[0], 5, 0, &buf, &len, NULL), SL__FILE_OK);
    close(fds[0]);
    assert_int_equal(len, 5);
    assert_string_equal(buf, "hello");
    free(buf);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "hello!", 6), 6);
    close(fds[1]);
    assert_int_equal(sl__file_read_fd(fds[0], 5, 0, &buf, &len, NULL), SL__FILE_ETOOLARGE);
    close(fds[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_pipe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
