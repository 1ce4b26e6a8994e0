/* grpc_pool.h: the allocator a gRPC session gives nghttp2 (grpc_pool.c):
 * free lists by size class, kept in the session, so the few small blocks
 * nghttp2 takes and gives back per stream cost no malloc. One thread: the
 * session's. */
#ifndef SLUICE_SERVER_GRPC_POOL_H
#define SLUICE_SERVER_GRPC_POOL_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>

#define SL__GRPC_POOL_CLASSES   8            /* 64 B .. 8 KiB */
#define SL__GRPC_POOL_MAX_BYTES (256 * 1024) /* kept per session at most */

/* Zeroed: empty. Blocks beyond SL__GRPC_POOL_MAX_BYTES go back to malloc. */
typedef struct sl__grpc_pool {
    void *cls[SL__GRPC_POOL_CLASSES]; /* free blocks, by size class */
    size_t pooled;                    /* bytes in them */
} sl__grpc_pool;

/* nghttp2's allocator over pool (which must outlive the nghttp2 session). */
nghttp2_mem sl__grpc_pool_mem(sl__grpc_pool *pool);

/* Frees the blocks kept (once nghttp2's session is gone); the pool is empty. */
void sl__grpc_pool_drop(sl__grpc_pool *pool);

#endif
