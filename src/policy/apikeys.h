/* apikeys.h: the table of valid API keys, read from a key file (one key per
 * line, with its plan tier and optionally its organisation) and looked up in
 * O(1) on every request. A key that is not in the table is refused (401,
 * after the limits that need no key: rules.h) and never becomes a limiter
 * key, so random keys create no state. The table is immutable once built and reference counted: a
 * reload builds a new one while requests finish on the old.
 *
 * File format (docs/identity.md):
 *
 *     # comment
 *     KEY [TIER [ORG]]
 *
 * separated by spaces or tabs; TIER "-" means none (so that an ORG can
 * follow). KEY is 1 to SL__APIKEY_MAX printable ASCII bytes other than '#';
 * TIER a declared tier; ORG 1 to SL__APIKEY_ORG_MAX of [A-Za-z0-9_.-]. */
#ifndef SLUICE_POLICY_APIKEYS_H
#define SLUICE_POLICY_APIKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL__APIKEY_MAX        256
#define SL__APIKEY_ORG_MAX    64
#define SL__APIKEYS_MAX_KEYS  (1u << 24)   /* 16 Mi keys */
#define SL__APIKEYS_MAX_BYTES (512u << 20) /* a larger key file is refused */

typedef struct sl__apikeys sl__apikeys;

/* One key. Pointers live as long as the table. */
typedef struct sl__apikey {
    const char *key;
    const char *org; /* NULL when the line has none */
    uint16_t keylen, orglen;
    int16_t tier; /* index of the tier, -1 for none */
} sl__apikey;

/* Maps a tier name to its index, or -1 when no such tier is declared (then
 * `names` is set to a human list of the declared ones for the message). */
typedef int (*sl__apikeys_tier_fn)(void *ctx, const char *name, size_t len, const char **names);

/* Receives each problem: line (1-based) and a message (never containing a
 * key: they are secrets). */
typedef void (*sl__apikeys_error_fn)(void *ctx, int line, const char *message);

/* Parses key-file text (len bytes, not necessarily NUL-terminated). `tier`
 * may be NULL (then any TIER other than "-" is an error). Returns 0 and
 * *out, or SL_EINVAL (SL_ENOMEM) after reporting every problem to err (one call each; err
 * decides how many it keeps). */
int sl__apikeys_parse(const char *text, size_t len, sl__apikeys_tier_fn tier, void *tier_ctx,
                      sl__apikeys_error_fn err, void *err_ctx, sl__apikeys **out);

/* Reads a regular file (at most SL__APIKEYS_MAX_BYTES) and parses it. Errors
 * about the file itself (cannot open, not a regular file, too large) are
 * reported with line 0. */
int sl__apikeys_load(const char *path, sl__apikeys_tier_fn tier, void *tier_ctx,
                     sl__apikeys_error_fn err, void *err_ctx, sl__apikeys **out);

void sl__apikeys_retain(sl__apikeys *k);
void sl__apikeys_release(sl__apikeys *k);

/* The key, or NULL. Constant time in the number of keys; no allocation. */
const sl__apikey *sl__apikeys_find(const sl__apikeys *k, const char *key, size_t len);
size_t sl__apikeys_count(const sl__apikeys *k);

#endif
