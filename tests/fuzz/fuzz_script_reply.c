/* fuzz_script_reply.c: libFuzzer target for sl__redis_script_parse, the
 * reader of the Redis store's script replies (src/store/redis_script.c), on
 * whatever hiredis's own reply reader makes of arbitrary bytes (the first
 * byte says how many items the call had). Properties:
 * - it never reads outside the reply, whatever its shape or depth;
 * - it accepts a reply only with every item decided and every field in
 *   range (allowed -> retry 0; retry -1 only when refused; no negative
 *   durations or remaining; a limit of at least 1);
 * - it refuses with every item undecided and a NUL-terminated message that
 *   fits the buffer it was given. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "sluice/error.h"
#include "store/redis_script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* hiredis 0.14's reader allocates an array of whatever length a "*<count>"
 * header claims (it has no maxelements yet): skip inputs claiming more than
 * 9999 elements, which only fuzz hiredis's allocator. */
static bool huge_array(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '*') continue;
        size_t d = 0;
        while (i + 1 + d < n && p[i + 1 + d] >= '0' && p[i + 1 + d] <= '9') d++;
        if (d > 4) return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || huge_array(data + 2, size - 2)) return 0;
    size_t n = data[0] % 17;
    size_t errlen = data[1] % 64;
    redisReader *rd = redisReaderCreate();
    if (!rd) return 0;
    redisReaderFeed(rd, (const char *)data + 2, size - 2);
    static const sl_params p = {.algorithm = SL_GCRA, .rate = {1, SL_NS_PER_SEC}, .burst = 1};
    for (int replies = 0; replies < 4; replies++) {
        void *reply = NULL;
        if (redisReaderGetReply(rd, &reply) != REDIS_OK || !reply) break;
        sl__script_item items[16];
        for (size_t i = 0; i < n; i++)
            items[i] = (sl__script_item){.params = &p, .rkey = "k", .rkeylen = 1, .decided = true};
        char err[64];
        memset(err, 'x', sizeof err);
        int rc = sl__redis_script_parse(reply, items, n, err, errlen);
        if (rc == 0) {
            for (size_t i = 0; i < n; i++) {
                const sl_decision *d = &items[i].decision;
                if (!items[i].decided || d->limit < 1 || d->remaining < 0 || d->reset_after < 0 ||
                    d->delay < 0 || d->retry_after < -1 || (d->allowed && d->retry_after != 0))
                    abort();
            }
        } else {
            if (rc != SL_EPARSE) abort();
            for (size_t i = 0; i < n; i++)
                if (items[i].decided) abort();
            if (errlen && memchr(err, '\0', errlen) == NULL) abort();
            if (errlen < sizeof err && err[errlen] != 'x') abort();
        }
        freeReplyObject(reply);
    }
    redisReaderFree(rd);
    return 0;
}
