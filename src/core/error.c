/* error.c: the text of every SL_E* code. */
#include "sluice/error.h"

const char *sl_strerror(int code) {
    switch (code) {
    case SL_OK:
        return "success";
    case SL_EINVAL:
        return "invalid argument";
    case SL_ERATE:
        return "rate must have a positive limit and a positive period";
    case SL_EBURST:
        return "burst must be at least 1";
    case SL_ECOST:
        return "cost is negative or larger than the limit can ever allow";
    case SL_EOVERFLOW:
        return "parameters too large for exact 64-bit arithmetic";
    case SL_ENOMEM:
        return "out of memory";
    case SL_EDEADLINE:
        return "the wait would exceed the deadline";
    case SL_EKEY:
        return "key too long";
    case SL_ETOOMANY:
        return "too many checks in one call";
    case SL_EPARSE:
        return "cannot parse";
    case SL_EALGORITHM:
        return "unknown algorithm";
    case SL_ETRANSFER:
        return "the HTTP transfer failed";
    case SL_ELEASE:
        return "no such lease (never acquired, already released, or expired)";
    default:
        return "unknown error";
    }
}
