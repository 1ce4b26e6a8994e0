/* reload.h: POST /v1/reload, owned by the main loop. A worker never reads a
 * config: it checks that the client may reload (admin.reload), reserves the
 * answer's place on the connection (sl__slot_defer) and queues an ask; the
 * main loop runs one reload for every ask queued before that reload began
 * (concurrent asks are coalesced) and hands each answer back to the asking
 * worker, which writes it on its own loop. SIGHUP reloads on the main loop
 * directly (sl__server_reload). */
#ifndef SLUICE_SERVER_RELOAD_H
#define SLUICE_SERVER_RELOAD_H

#include <stdbool.h>
#include <uv.h>

#include "server/server.h"
#include "util/buf.h"

#define SL__RELOAD_MAX_ASKS 1024 /* asks waiting at once; more get 503 reload_busy */

/* Sets up the main loop's side (before the workers start). Returns 0 or a
 * libuv error. */
int sl__reload_init(sl__server *s, uv_loop_t *main_loop);

/* Main thread, its loop stopped, before the workers drain: refuses new asks,
 * answers the waiting ones 503 (draining) and closes the main loop's handle
 * (run the loop once more to finish closing it). */
void sl__reload_stop(sl__server *s);

/* POST /v1/reload on w's loop, for the request being handled there, whose
 * answer slot is `slot` (req's headers are read now, not kept). Either the
 * answer is deferred in slot (returns true; it is written when the reload
 * is done), or it is complete in `out` at once (returns false: refused by
 * admin.reload, too many asks waiting, shutting down, out of memory). keep:
 * may the connection stay open after the answer. */
struct sl__http_request;
bool sl__reload_ask(sl__worker *w, sl__answer_slot *slot, const struct sl__http_request *req,
                    bool keep, sl__buf *out);

/* admin.reload's access rule (off, loopback or token), the one for every
 * admin call: may the client of req (on slot) make `what` ("POST
 * /v1/reload", "POST /v1/ramp")? If not, writes the refusal (403 or 401,
 * naming `what`) into out and returns false. */
bool sl__reload_allowed(sl__worker *w, sl__answer_slot *slot, const struct sl__http_request *req,
                        bool keep, sl__buf *out, const char *what);

/* Is the client on slot connected from loopback (127.0.0.0/8, ::1, or
 * ::ffff:127.x.y.z)? false for a NULL slot or a peer that cannot be read. */
bool sl__slot_loopback(sl__answer_slot *slot);

/* On w's loop (its wake): writes the answers of the reloads done for w's
 * clients. Call before draining. */
void sl__reload_deliver(sl__worker *w);

#endif
