/* yaml_reader.h: the one YAML reading layer of the config loader
 * (config*.c): an event cursor over libyaml with bounded nesting, the list
 * of "file:line: field: message" errors, typed scalars (numbers, booleans,
 * sizes, durations, enums with "did you mean"), and the walks every section
 * is made of (the keys of a mapping, a mapping of user-chosen names, a list
 * of items). No document tree is built: the work is linear in the input.
 *
 * Conventions of every function below: `path` is the field named in a
 * message ("policies[1].rate"); a function that reads a value consumes the
 * current node; a problem is reported (never silently dropped) and reading
 * goes on, except after a YAML syntax error, too deep a nesting or an
 * allocation failure, which set `fatal`: every later sl__yaml_next is then
 * false. Scalar text returned lives until the next event. */
#ifndef SLUICE_POLICY_YAML_READER_H
#define SLUICE_POLICY_YAML_READER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "policy/config.h"

#define SL__YAML_MAX_DEPTH 32  /* mappings and lists inside each other; the schema needs 4 */
#define SL__YAML_SHOW_MAX  40  /* bytes of a user's value quoted in a message */
#define SL__YAML_PATH_SIZE 112 /* a field path ("rules[3].limits[0].by[1]") */

/* ---- the error list (sl__config_errors) ---- */

/* Appends "source:line: field: message" (no "line: " when line <= 0, no
 * "field: " when field is NULL or ""). errs->n counts every call; only the
 * first SL__CONFIG_MAX_ERRORS are stored, each fitted to its slot: a longer
 * one keeps its start and its end (what is wrong), its middle elided as
 * "..." (a long path). */
__attribute__((format(printf, 5, 0))) void sl__errors_addv(sl__config_errors *errs,
                                                           const char *source, int line,
                                                           const char *field, const char *fmt,
                                                           va_list ap);
__attribute__((format(printf, 5, 6))) void sl__errors_add(sl__config_errors *errs,
                                                          const char *source, int line,
                                                          const char *field, const char *fmt, ...);

/* ---- the cursor ---- */

/* Where a key that is unknown in one place does belong (for the message). */
typedef struct sl__yaml_home {
    const char *key;
    const char *where;
} sl__yaml_home;

typedef struct sl__yaml {
    yaml_parser_t yp;
    yaml_event_t ev; /* the current event, valid while have_ev */
    bool have_ev;
    bool fatal; /* stop: syntax error, nesting too deep, out of memory */
    int depth;  /* mappings and lists open at the current event */
    const char *text;
    size_t len;
    const char *source; /* names the text in messages */
    sl__config_errors *errs;
    int error_line[SL__CONFIG_MAX_ERRORS]; /* of each stored message, to sort them */
    int key_line;                          /* of the key whose value is being read */
    const sl__yaml_home *homes;            /* for "unknown key here (x belongs ...)" */
    size_t nhomes;
    void *user; /* the caller's context, for its callbacks */
} sl__yaml;

/* Starts reading `text` (len bytes, borrowed until sl__yaml_close); errors
 * go to errs (not reset). Returns SL_OK, or SL_ENOMEM when libyaml cannot
 * allocate (nothing reported, nothing to close). */
int sl__yaml_open(sl__yaml *y, const char *text, size_t len, const char *source,
                  sl__config_errors *errs);
void sl__yaml_close(sl__yaml *y);

/* Advances to the next event. False (with the error reported) when reading
 * must stop. */
bool sl__yaml_next(sl__yaml *y);
/* Inside a list: advances to the next item; false at the list's end or when
 * reading must stop. */
bool sl__yaml_next_item(sl__yaml *y);
/* The current event starts a node: consumes the whole node, so that the
 * current event is its last one. */
void sl__yaml_skip(sl__yaml *y);
/* The 1-based line of the current event. */
int sl__yaml_line(const sl__yaml *y);

/* One error at `line` about `field` (a path such as "policies[1].rate"). */
__attribute__((format(printf, 4, 5))) void sl__yaml_error(sl__yaml *y, int line, const char *field,
                                                          const char *fmt, ...);
/* Orders the stored messages by line (stable), as a compiler would: some
 * are only found after the lines below them (a missing key, a clash). */
void sl__yaml_sort_errors(sl__yaml *y);

/* ---- what the current node is ---- */

bool sl__yaml_is_map(const sl__yaml *y);    /* a mapping starts */
bool sl__yaml_is_seq(const sl__yaml *y);    /* a list starts */
bool sl__yaml_is_scalar(const sl__yaml *y); /* any scalar, null included */
/* Plain and untagged: the only form numbers, booleans and nulls take here. */
bool sl__yaml_is_plain(const sl__yaml *y);
/* Plain "", "~", "null", "Null" or "NULL". */
bool sl__yaml_is_null(const sl__yaml *y);
/* The current scalar's bytes (NUL-terminated; may hold NULs) and length. */
const char *sl__yaml_text(const sl__yaml *y);
size_t sl__yaml_len(const sl__yaml *y);

/* `s` as a quoted, escaped, ASCII-only and shortened text for a message
 * (empty when size < 16). */
void sl__yaml_quote(char *out, size_t size, const char *s, size_t len);
/* What the current node is, for "expected X, got Y". */
void sl__yaml_describe(const sl__yaml *y, char *out, size_t size);
/* Reports "expected `what`, got ..." and skips the node. */
void sl__yaml_expected(sl__yaml *y, const char *path, const char *what);

/* ---- scalars ---- */

/* A non-null scalar without NUL bytes (so C string functions see all of it),
 * or NULL after reporting why not. */
const char *sl__yaml_scalar(sl__yaml *y, const char *path, const char *what);
/* Decimal digits only; false on anything else or beyond UINT64_MAX. */
bool sl__yaml_parse_u64(const char *s, uint64_t *out);
/* An unquoted whole number in [min, max]; false after reporting. */
bool sl__yaml_uint(sl__yaml *y, const char *path, const char *what, uint64_t min, uint64_t max,
                   uint64_t *out);
/* Exactly true or false, unquoted; false after reporting. */
bool sl__yaml_bool(sl__yaml *y, const char *path, bool *out);
/* "1048576", "64KiB", "256 MiB" (1024-based units) in [min, max]. */
bool sl__yaml_size(sl__yaml *y, const char *path, uint64_t min, uint64_t max, uint64_t *out);
/* "10s", "500ms" (sl_duration_parse) in [min, max] nanoseconds. */
bool sl__yaml_duration(sl__yaml *y, const char *path, int64_t min, int64_t max, int64_t *out);

/* ---- enums and "did you mean" ---- */

/* The closest of `names` to `word` (len bytes) if it is close enough to be
 * a typo, else NULL. */
const char *sl__yaml_suggest(const char *word, size_t len, const char *const *names, size_t n);
/* "a, b or c" into out (truncated to size). */
void sl__yaml_join_names(char *out, size_t size, const char *const *names, size_t n);

/* What other tools call a value, for "did you mean". */
typedef struct sl__yaml_alias {
    const char *name, *means;
} sl__yaml_alias;

/* One of `names` (its index), or SL_EINVAL (-1) after reporting "unknown
 * `what` ..." (or that the value is no scalar). */
int sl__yaml_enum(sl__yaml *y, const char *path, const char *what, const char *const *names,
                  size_t n);
int sl__yaml_enum_aliased(sl__yaml *y, const char *path, const char *what, const char *const *names,
                          size_t n, const sl__yaml_alias *aliases, size_t naliases);

/* ---- mappings and lists ---- */

/* Receives the value of known key `key` (an index into the keys) as the
 * current event, and consumes it. */
typedef void (*sl__yaml_value_fn)(sl__yaml *y, void *obj, int key, const char *path);

/* The current event is MAPPING_START: calls fn for each known key; reports
 * unknown keys (with y->homes and "did you mean") and duplicate keys.
 * seen[i] gets the line of key i (0: absent). */
void sl__yaml_each_key(sl__yaml *y, const char *parent, const char *const *keys, size_t nkeys,
                       sl__yaml_value_fn fn, void *obj, int *seen);
/* A section (a mapping value): absent when null, "expected `what`" when
 * not a mapping, else sl__yaml_each_key. */
void sl__yaml_section(sl__yaml *y, const char *path, const char *const *keys, size_t nkeys,
                      sl__yaml_value_fn fn, void *obj, int *seen, const char *what);

/* Receives one user-chosen key: at most SL__POLICY_NAME_MAX + 1 bytes of it,
 * NUL-terminated, and its length (SL__POLICY_NAME_MAX + 1 when it holds a
 * NUL byte), with its value as the current event (to consume). */
typedef void (*sl__yaml_named_fn)(sl__yaml *y, void *obj, const char *key, size_t len, int line,
                                  const char *path);
/* The current event is MAPPING_START of a mapping whose keys are names the
 * user chose (tiers, policies in a tier): calls fn for each. */
void sl__yaml_each_named(sl__yaml *y, const char *parent, sl__yaml_named_fn fn, void *obj);

/* A list of items, such as policies: or rules[0].limits. */
typedef struct sl__yaml_list {
    const char *what; /* "a list of rules (- name: ...)": when the node is not a list */
    const char *item; /* non-NULL: every item must be a mapping ("a rule (a mapping of ...)") */
    size_t max;       /* items beyond are refused (SIZE_MAX: no cap) */
    const char *many; /* "too many <many> (at most <max><why>)", once, at item max */
    const char *why;  /* "" or ": one request checks at most that many" */
} sl__yaml_list;

/* Receives item i (as the current event, to consume) at `path` ("rules[2]"). */
typedef void (*sl__yaml_item_fn)(sl__yaml *y, void *obj, size_t i, const char *path);

/* The current node is a list (a null one is absent, anything else is
 * reported with l->what): calls fn for each item within l's cap and of the
 * right kind, skipping the others after reporting. Stops when fatal. */
void sl__yaml_each_item(sl__yaml *y, const char *path, const sl__yaml_list *l, sl__yaml_item_fn fn,
                        void *obj);

/* A key that must be there, and why (for "missing (why)"). */
typedef struct sl__yaml_required {
    int key;
    const char *why;
} sl__yaml_required;

/* Reports "path.key: missing (why)" at `line` for every required key that
 * seen[] (from sl__yaml_each_key) does not have. */
void sl__yaml_missing(sl__yaml *y, int line, const char *path, const char *const *keys,
                      const int *seen, const sl__yaml_required *req, size_t nreq);

/* Makes room for one more element in a growing array `arr` of n elements
 * (the capacity doubles from `first`) and returns the array, moved or not.
 * On failure reports "out of memory" at line/field, marks the reading fatal
 * and returns NULL (arr is then unchanged and still owned by the caller). */
void *sl__yaml_grow(sl__yaml *y, void *arr, size_t *cap, size_t n, size_t elem, size_t first,
                    int line, const char *field);

/* Appends one zeroed element (elem bytes) to the growing array whose
 * pointer is at `arrp` (a T ** passed as void *) and whose length is *n,
 * and returns it (*n counts it). The capacity *cap doubles from `first`;
 * cap NULL: the array holds exactly *n elements and grows by one. On
 * failure as sl__yaml_grow: NULL after reporting "out of memory" at
 * line/field (fatal), the array and *n unchanged. */
void *sl__yaml_push(sl__yaml *y, void *arrp, size_t *cap, size_t *n, size_t elem, size_t first,
                    int line, const char *field);

/* Receives one scalar of a "one or a list" value (as the current event, to
 * consume) at `path` ("rules[0].limits[1].by[2]", or the value's own path
 * when it is no list). */
typedef void (*sl__yaml_scalar_fn)(sl__yaml *y, void *obj, const char *path);

/* A value that is one scalar or a list of them (method: GET, or method:
 * [GET, POST]): calls fn for the value itself, or for each item of the
 * list. */
void sl__yaml_each_scalar(sl__yaml *y, const char *path, sl__yaml_scalar_fn fn, void *obj);

#endif
