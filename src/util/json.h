/* json.h: stepping over the JSON sluice writes itself (a rule's metadata,
 * policy/domains_read.c): no whitespace, strings escaped only as \" \\
 * and \u00XX, numbers as JSON writes them. Not a parser of foreign input:
 * given other text it stops at the first byte it does not expect, never
 * reading past `end`. */
#ifndef SLUICE_UTIL_JSON_H
#define SLUICE_UTIL_JSON_H

#include <stddef.h>

/* The length of the value (object, array, string, number, true, false,
 * null) at p, or 0 if none is there in full before end. Depth is bounded by
 * the writer (16); the walk keeps no stack. */
static inline size_t sl__json_skip(const char *p, const char *end) {
    const char *s = p;
    size_t depth = 0;
    do {
        if (s >= end) return 0;
        char c = *s++;
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (!depth--) return 0;
        } else if (c == '"') {
            while (s < end && *s != '"') s += *s == '\\' ? 2 : 1;
            if (s++ >= end) return 0;
        } else if (c != ',' && c != ':') { /* a number, true, false or null */
            while (s < end && *s != ',' && *s != ':' && *s != '}' && *s != ']') s++;
        }
    } while (depth);
    return (size_t)(s - p);
}

#endif
