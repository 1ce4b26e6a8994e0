/* response.h: the answer object (struct sl_response) and how the client
 * fills it while libcurl reads: the status line, the header fields of the
 * final block (bounded), and the body kept in memory (bounded). */
#ifndef SLUICE_CLIENT_RESPONSE_H
#define SLUICE_CLIENT_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/client.h"

#define SL__MAX_FIELDS      256
#define SL__MAX_FIELD_BYTES (100 * 1024)

struct sl_response {
    int status;
    sl_response_info info;
    char *fields; /* "name\0value\0" pairs */
    size_t fields_len, fields_cap;
    size_t nfields;
    char *body; /* NUL-terminated */
    size_t body_len, body_cap;
};

/* A new, empty answer; NULL when out of memory. */
sl_response *sl__response_new(void);

/* Forgets status, fields and body (keeps the memory for the next attempt). */
void sl__response_reset(sl_response *r);

/* Feeds one header line as libcurl hands it over (with its CRLF). A status
 * line ("HTTP/1.1 429 ...") starts a new block: the fields of interim (1xx)
 * answers are dropped that way. Returns 1 when the line is the blank line
 * that ends a final (>= 200) block, 0 otherwise, SL_ENOMEM when out of memory.
 * Fields beyond SL__MAX_FIELDS or SL__MAX_FIELD_BYTES are dropped. */
int sl__response_header_line(sl_response *r, const char *line, size_t len);

/* Appends body bytes, up to max bytes in all. Returns 0, SL_EINVAL when that
 * would exceed max, or SL_ENOMEM. */
int sl__response_append(sl_response *r, const void *data, size_t len, size_t max);

#endif
