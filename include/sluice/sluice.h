/* sluice/sluice.h: libsluice, in-process rate limiting. Include this one
 * header; link with `pkg-config --libs sluice`.
 *
 *   limit.h    algorithms, parameters, decisions, rate parsing
 *   table.h    keyed table: a state per key, thread-safe, bounded memory
 *   limiter.h  one token bucket with allow / reserve / wait / set rate
 *   concurrency.h  concurrency limits: leases held at once, acquire / release / renew
 *   adaptive.h a concurrency limit that follows latencies (gradient style)
 *   clock.h    clocks and the injectable clock used by waiting
 *   error.h    error codes and sl_strerror() */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include "sluice/adaptive.h"
#include "sluice/clock.h"
#include "sluice/concurrency.h"
#include "sluice/error.h"
#include "sluice/graphql.h"
#include "sluice/limit.h"
#include "sluice/limiter.h"
#include "sluice/table.h"

#define SLUICE_VERSION "0.1.0"

#endif
