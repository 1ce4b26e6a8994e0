/* grpc_pool.c: the memory of a gRPC session's nghttp2 (grpc_pool.h).
 *
 * nghttp2 allocates and frees a few small blocks per stream (the stream,
 * its frames, header copies). A free list per size class in the session
 * (one thread) makes them cheap; blocks beyond SL__GRPC_POOL_MAX_BYTES go
 * back to malloc. Each block starts with a header that says its class (or
 * its size when it is too large for one). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_pool.h"

typedef union pool_hdr {
    struct {
        uint32_t cls; /* SL__GRPC_POOL_CLASSES: a large block */
        size_t size;  /* usable bytes */
    } h;
    max_align_t align;
} pool_hdr;

static size_t class_bytes(unsigned c) {
    return (size_t)64 << c;
}

static void *pool_malloc(size_t size, void *ud) {
    sl__grpc_pool *s = ud;
    size_t need = size + sizeof(pool_hdr);
    unsigned c = 0;
    while (c < SL__GRPC_POOL_CLASSES && class_bytes(c) < need) c++;
    pool_hdr *h;
    if (c < SL__GRPC_POOL_CLASSES && s->cls[c]) {
        h = s->cls[c];
        s->cls[c] = *(void **)(h + 1);
        s->pooled -= class_bytes(c);
    } else {
        h = malloc(c < SL__GRPC_POOL_CLASSES ? class_bytes(c) : need);
        if (!h) return NULL;
    }
    h->h.cls = c;
    h->h.size = c < SL__GRPC_POOL_CLASSES ? class_bytes(c) - sizeof(pool_hdr) : size;
    return h + 1;
}

static void pool_free(void *p, void *ud) {
    if (!p) return;
    sl__grpc_pool *s = ud;
    pool_hdr *h = (pool_hdr *)p - 1;
    unsigned c = h->h.cls;
    if (c >= SL__GRPC_POOL_CLASSES || s->pooled + class_bytes(c) > SL__GRPC_POOL_MAX_BYTES) {
        free(h);
        return;
    }
    *(void **)(h + 1) = s->cls[c];
    s->cls[c] = h;
    s->pooled += class_bytes(c);
}

static void *pool_calloc(size_t n, size_t size, void *ud) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = pool_malloc(n * size, ud);
    if (p) memset(p, 0, n * size);
    return p;
}

static void *pool_realloc(void *p, size_t size, void *ud) {
    if (!p) return pool_malloc(size, ud);
    size_t have = ((pool_hdr *)p - 1)->h.size;
    if (size <= have) return p;
    void *q = pool_malloc(size, ud);
    if (!q) return NULL;
    memcpy(q, p, have);
    pool_free(p, ud);
    return q;
}

void sl__grpc_pool_drop(sl__grpc_pool *s) {
    for (unsigned c = 0; c < SL__GRPC_POOL_CLASSES; c++) {
        while (s->cls[c]) {
            pool_hdr *h = s->cls[c];
            s->cls[c] = *(void **)(h + 1);
            free(h);
        }
    }
    s->pooled = 0;
}

nghttp2_mem sl__grpc_pool_mem(sl__grpc_pool *pool) {
    return (nghttp2_mem){.mem_user_data = pool,
                         .malloc = pool_malloc,
                         .free = pool_free,
                         .calloc = pool_calloc,
                         .realloc = pool_realloc};
}
