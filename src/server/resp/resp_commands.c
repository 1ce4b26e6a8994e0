/* resp_commands.c: the commands sluiced answers over RESP (see resp.h and
 * docs/resp.md): CL.THROTTLE (redis-cell), SL.CHECK (policies), and what
 * redis-cli, redis-benchmark and the usual client libraries send on their
 * own: PING, ECHO, QUIT, INFO, COMMAND [COUNT|DOCS|INFO|LIST|GETKEYS|
 * GETKEYSANDFLAGS], CONFIG GET,
 * HELLO (RESP2 only), AUTH, SELECT 0, CLIENT SETNAME|SETINFO|GETNAME.
 *
 * Dispatch walks a small table comparing the length first and then the bytes
 * case-insensitively; CL.THROTTLE is first. The hot path (CL.THROTTLE,
 * SL.CHECK) allocates nothing: integers are parsed in place and the reply is
 * written with one reservation. Error texts follow Redis ("ERR wrong number
 * of arguments for 'x' command", "ERR unknown command ...") and redis-cell
 * ("Cell error: Store error: ..." for its generic errors), so clients and
 * their users see what they know. COMMAND INFO and COMMAND GETKEYS describe
 * CL.THROTTLE as Redis 7 does with the redis-cell module loaded (arity -1,
 * flags write and module, key 1/1/1), so cluster-aware clients route it. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/cell.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "server/reply.h"
#include "server/resp/resp.h"
#include "server/resp/resp_args.h"
#include "server/resp/resp_check.h"
#include "server/resp/resp_del.h"
#include "server/resp/resp_lease.h"
#include "sluice/sluice.h"
#include "util/units.h"

/* ---- helpers ---------------------------------------------------------------- */

static void bulk_str(sl__buf *out, const char *s) {
    sl__resp_bulk(out, s, strlen(s));
}

/* ---- the command table ---------------------------------------------------------- */

typedef int (*handler_fn)(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out);

typedef struct arg_doc {
    const char *name, *type;
    bool optional;
} arg_doc;

typedef struct cmd_def {
    const char *name; /* lower case, as COMMAND reports it */
    size_t len;
    int arity;      /* Redis's convention: n exactly, -n at least n (counting the name) */
    bool own_arity; /* the handler checks the count (and words the error its own way) */
    const char *flags[3];
    int first_key, last_key, key_step;
    const char *summary, *since, *group;
    const arg_doc *args;
    size_t nargs;
    handler_fn fn;
} cmd_def;

static int cmd_throttle(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_ping(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_echo(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_quit(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_info(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_command(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_config(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_hello(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_auth(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_select(const sl__resp_context *, const sl__resp_command *, sl__buf *);
static int cmd_client(const sl__resp_context *, const sl__resp_command *, sl__buf *);

static const arg_doc throttle_args[] = {{"key", "key", false},
                                        {"max_burst", "integer", false},
                                        {"count", "integer", false},
                                        {"period", "integer", false},
                                        {"quantity", "integer", true}};
static const arg_doc check_args[] = {{"policy", "string", false},  {"key", "key", false},
                                     {"cost", "integer", true},    {"delay", "pure-token", true},
                                     {"priority", "string", true}, {"retry", "integer", true}};
static const arg_doc del_args[] = {{"key", "key", false}};
static const arg_doc acquire_args[] = {{"policy", "string", false}, {"key", "key", false}};
static const arg_doc lease_args[] = {
    {"policy", "string", false}, {"key", "key", false}, {"lease", "string", false}};
static const arg_doc release_args[] = {{"policy", "string", false},
                                       {"key", "key", false},
                                       {"lease", "string", false},
                                       {"latency_ms", "integer", true}};
static const arg_doc message_opt[] = {{"message", "string", true}};
static const arg_doc message[] = {{"message", "string", false}};
static const arg_doc section_opt[] = {{"section", "string", true}};
static const arg_doc subcommand[] = {{"subcommand", "string", true}};
static const arg_doc config_args[] = {{"subcommand", "string", false},
                                      {"parameter", "string", false}};
static const arg_doc hello_args[] = {{"protover", "integer", true}};
static const arg_doc auth_args[] = {{"password", "string", false}};
static const arg_doc select_args[] = {{"index", "integer", false}};
static const arg_doc client_args[] = {{"subcommand", "string", false}};

#define ARGS(a) (a), sizeof(a) / sizeof((a)[0])
#define NAME(s) s, sizeof(s) - 1

static const cmd_def commands[] = {
    {NAME("cl.throttle"),
     -1, /* what Redis reports for every module command */
     true,
     {"write", "module"}, /* redis-cell registers "write"; Redis adds "module" */
     1,
     1,
     1,
     "Rate-limits a key with GCRA, as redis-cell does",
     "1.0.0",
     "sluice",
     ARGS(throttle_args),
     cmd_throttle},
    {NAME("del"),
     -2,
     true,
     {"write"},
     1,
     -1,
     1,
     "Deletes CL.THROTTLE keys (their state), as DEL does with redis-cell",
     "1.0.0",
     "keyspace",
     ARGS(del_args),
     sl__resp_cmd_del},
    {NAME("sl.check"),
     -3,
     true,
     {"write", "fast"},
     2,
     2,
     1,
     "Checks a key against a configured sluiced policy",
     "1.0.0",
     "sluice",
     ARGS(check_args),
     sl__resp_cmd_check},
    {NAME("sl.acquire"),
     3,
     true,
     {"write", "fast"},
     2,
     2,
     1,
     "Takes a lease of a configured concurrency limit",
     "1.0.0",
     "sluice",
     ARGS(acquire_args),
     sl__resp_cmd_acquire},
    {NAME("sl.release"),
     -4,
     true,
     {"write", "fast"},
     2,
     2,
     1,
     "Gives back a lease of a concurrency limit",
     "1.0.0",
     "sluice",
     ARGS(release_args),
     sl__resp_cmd_release},
    {NAME("sl.renew"),
     4,
     true,
     {"write", "fast"},
     2,
     2,
     1,
     "Extends a lease of a concurrency limit",
     "1.0.0",
     "sluice",
     ARGS(lease_args),
     sl__resp_cmd_renew},
    {NAME("ping"),
     -1,
     false,
     {"fast", "stale"},
     0,
     0,
     0,
     "Returns the server's liveliness response",
     "1.0.0",
     "connection",
     ARGS(message_opt),
     cmd_ping},
    {NAME("echo"),
     2,
     false,
     {"fast"},
     0,
     0,
     0,
     "Returns the given string",
     "1.0.0",
     "connection",
     ARGS(message),
     cmd_echo},
    {NAME("quit"),
     -1,
     false,
     {"fast", "noscript"},
     0,
     0,
     0,
     "Closes the connection",
     "1.0.0",
     "connection",
     NULL,
     0,
     cmd_quit},
    {NAME("info"),
     -1,
     false,
     {"stale"},
     0,
     0,
     0,
     "Returns information and statistics about the server",
     "1.0.0",
     "server",
     ARGS(section_opt),
     cmd_info},
    {NAME("command"),
     -1,
     false,
     {"stale"},
     0,
     0,
     0,
     "Returns detailed information about the commands",
     "2.8.13",
     "server",
     ARGS(subcommand),
     cmd_command},
    {NAME("config"),
     -2,
     false,
     {"stale"},
     0,
     0,
     0,
     "Reads configuration parameters (GET only)",
     "2.0.0",
     "server",
     ARGS(config_args),
     cmd_config},
    {NAME("hello"),
     -1,
     false,
     {"fast", "stale"},
     0,
     0,
     0,
     "Handshakes with the server (RESP2 only)",
     "6.0.0",
     "connection",
     ARGS(hello_args),
     cmd_hello},
    {NAME("auth"),
     -2,
     false,
     {"fast", "stale"},
     0,
     0,
     0,
     "Authenticates the connection",
     "1.0.0",
     "connection",
     ARGS(auth_args),
     cmd_auth},
    {NAME("select"),
     2,
     false,
     {"fast"},
     0,
     0,
     0,
     "Selects the database (only 0 exists)",
     "1.0.0",
     "connection",
     ARGS(select_args),
     cmd_select},
    {NAME("client"),
     -2,
     false,
     {"stale"},
     0,
     0,
     0,
     "Names the connection (accepted, not kept)",
     "2.4.0",
     "connection",
     ARGS(client_args),
     cmd_client},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const cmd_def *find_command(const char *name, size_t len) {
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].len == len && ieq(name, len, commands[i].name, len)) return &commands[i];
    return NULL;
}

/* ---- dispatch ----------------------------------------------------------------- */

int sl__resp_execute(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    if (cmd->argc == 0) return 0; /* "*0", "*-1", a blank inline line: no reply */
    const cmd_def *d = find_command(cmd->argv[0], cmd->argl[0]);
    if (!d) {
        /* Redis 7's text: the name and the first arguments, each quoted, cut at 128 bytes */
        char args[2 * ECHO_MAX + 8];
        size_t n = 0;
        for (size_t i = 1; i < cmd->argc && n < ECHO_MAX; i++) {
            int w = snprintf(args + n, sizeof args - n, "'%.*s' ",
                             (int)(cmd->argl[i] < ECHO_MAX - n ? cmd->argl[i] : ECHO_MAX - n),
                             cmd->argv[i]);
            if (w < 0) break;
            n += (size_t)w < sizeof args - n ? (size_t)w : sizeof args - n - 1;
        }
        args[n] = '\0';
        sl__resp_errorf(out, "ERR unknown command '%.*s', with args beginning with: %s",
                        echo_len(cmd->argl[0]), cmd->argv[0], args);
        return 0;
    }
    if (!d->own_arity &&
        (d->arity > 0 ? cmd->argc != (size_t)d->arity : cmd->argc < (size_t)-d->arity)) {
        wrong_args(out, d->name);
        return 0;
    }
    return d->fn(ctx, cmd, out);
}

/* ---- CL.THROTTLE ---------------------------------------------------- */

static sl__decider *decider_of(const sl__resp_context *ctx) {
    return ctx->decider ? ctx->decider : sl__decider_memory();
}

static void throttle_done(sl__decide_call *call) {
    sl__reply *r = sl__cell_user(call);
    int64_t reply[5];
    char err[SL__CELL_ERR_MAX];
    if (sl__cell_finish(call, reply, err, sizeof err) != 0)
        sl__resp_error(sl__reply_out(r), err);
    else
        sl__resp_ints(sl__reply_out(r), reply, 5);
    sl__reply_end(r);
    sl__decide_call_free(call);
}

static int cmd_throttle(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    if (cmd->argc != 5 && cmd->argc != 6) {
        sl__resp_error(out, "Cell error: Store error: Usage: cl.throttle <key> <max_burst> "
                            "<count per period> <period> [<quantity>]");
        return 0;
    }
    int64_t v[4] = {0, 0, 0, 1}; /* max_burst, count, period, quantity */
    for (size_t i = 2; i < cmd->argc; i++) {
        if (!parse_i64(cmd->argv[i], cmd->argl[i], &v[i - 2])) {
            sl__resp_errorf(out, "Cell error: Store error: Couldn't parse as integer: %.*s",
                            echo_len(cmd->argl[i]), cmd->argv[i]);
            return 0;
        }
    }
    if (!ctx->cell) {
        sl__resp_error(out, "ERR CL.THROTTLE is not enabled on this server");
        return 0;
    }
    char err[SL__CELL_ERR_MAX];
    sl__decide_call *call;
    if (sl__cell_prepare(ctx->cell, cmd->argv[1], cmd->argl[1], v[0], v[1], v[2], v[3],
                         sizeof(sl__reply), &call, err, sizeof err) != 0) {
        sl__resp_error(out, err);
        return 0;
    }
    sl__reply *r = sl__cell_user(call);
    call->done = throttle_done;
    bool answered;
    sl__reply_begin(r, ctx->slot, out, &answered);
    sl__engine_decide(decider_of(ctx), call, ctx->now);
    if (!answered && !sl__reply_wait(r)) sl__resp_error(out, "ERR out of memory");
    return 0;
}

/* ---- connection commands ---------------------------------------------------------- */

static int cmd_ping(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    if (cmd->argc == 1)
        sl__resp_simple(out, "PONG");
    else if (cmd->argc == 2)
        sl__resp_bulk(out, cmd->argv[1], cmd->argl[1]);
    else
        wrong_args(out, "ping");
    return 0;
}

static int cmd_echo(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    sl__resp_bulk(out, cmd->argv[1], cmd->argl[1]);
    return 0;
}

static int cmd_quit(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    (void)cmd;
    sl__resp_simple(out, "OK");
    return 1;
}

static int cmd_hello(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    if (cmd->argc >= 2) {
        int64_t ver;
        if (!parse_i64(cmd->argv[1], cmd->argl[1], &ver)) {
            sl__resp_error(out, "ERR Protocol version is not an integer or out of range");
            return 0;
        }
        if (ver != 2) { /* clients that ask for 3 fall back to RESP2 on this error */
            sl__resp_error(out, "NOPROTO sorry, this protocol version is not supported");
            return 0;
        }
    }
    /* AUTH and SETNAME options are accepted and ignored: no users, no names */
    sl__resp_array(out, 14);
    bulk_str(out, "server");
    bulk_str(out, "redis");
    bulk_str(out, "version");
    bulk_str(out, "7.0.0");
    bulk_str(out, "proto");
    sl__resp_int(out, 2);
    bulk_str(out, "id");
    sl__resp_int(out, 0);
    bulk_str(out, "mode");
    bulk_str(out, "standalone");
    bulk_str(out, "role");
    bulk_str(out, "master");
    bulk_str(out, "modules");
    sl__resp_array(out, 0);
    return 0;
}

static int cmd_auth(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    if (cmd->argc > 3) {
        sl__resp_error(out, "ERR syntax error");
        return 0;
    }
    /* what Redis answers when no password is configured */
    sl__resp_error(out, "ERR AUTH <password> called without any password configured for the "
                        "default user. Are you sure your configuration is correct?");
    return 0;
}

static int cmd_select(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    int64_t db;
    if (!parse_i64(cmd->argv[1], cmd->argl[1], &db))
        sl__resp_error(out, "ERR value is not an integer or out of range");
    else if (db != 0)
        sl__resp_error(out, "ERR DB index is out of range");
    else
        sl__resp_simple(out, "OK");
    return 0;
}

static void unknown_subcommand(sl__buf *out, const sl__resp_command *cmd, const char *upper) {
    sl__resp_errorf(out, "ERR unknown subcommand '%.*s'. Try %s HELP.", echo_len(cmd->argl[1]),
                    cmd->argv[1], upper);
}

static int cmd_client(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    const char *sub = cmd->argv[1];
    size_t n = cmd->argl[1];
    if (IEQ(sub, n, "setname")) {
        if (cmd->argc != 3)
            wrong_args(out, "client|setname");
        else
            sl__resp_simple(out, "OK");
    } else if (IEQ(sub, n, "setinfo")) {
        if (cmd->argc != 4)
            wrong_args(out, "client|setinfo");
        else
            sl__resp_simple(out, "OK");
    } else if (IEQ(sub, n, "getname")) {
        sl__resp_null(out);
    } else {
        unknown_subcommand(out, cmd, "CLIENT");
    }
    return 0;
}

/* ---- INFO ------------------------------------------------------------------------ */

/* Is section `name` (n bytes) asked for by INFO's arguments? */
static bool section_wanted(const sl__resp_command *cmd, const char *name, size_t n) {
    if (cmd->argc == 1) return true;
    for (size_t i = 1; i < cmd->argc; i++) {
        const char *a = cmd->argv[i];
        size_t al = cmd->argl[i];
        if (IEQ(a, al, "all") || IEQ(a, al, "default") || IEQ(a, al, "everything")) return true;
        if (al == n) {
            size_t j = 0;
            while (j < n && lower((unsigned char)a[j]) == lower((unsigned char)name[j])) j++;
            if (j == n) return true;
        }
    }
    return false;
}

static int cmd_info(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    sl__buf text, sel;
    sl__buf_init(&text);
    sl__buf_init(&sel);
    sl__buf_printf(&text,
                   "# Server\r\nredis_version:7.0.0\r\nsluice_version:%s\r\n"
                   "redis_mode:standalone\r\narch_bits:%d\r\nprocess_id:%ld\r\n",
                   SLUICE_VERSION, (int)(sizeof(void *) * 8), (long)getpid());
    if (ctx->cell) {
        uint64_t keys, bytes, evicted;
        sl__cell_stats(ctx->cell, &keys, &bytes, &evicted);
        sl__buf_printf(&text,
                       "\r\n# Cell\r\ncell_keys:%llu\r\ncell_bytes:%llu\r\n"
                       "cell_evicted_live:%llu\r\n",
                       (unsigned long long)keys, (unsigned long long)bytes,
                       (unsigned long long)evicted);
    }
    if (ctx->info) {
        sl__buf_puts(&text, "\r\n");
        ctx->info(ctx->info_ctx, &text);
    }
    /* keep the sections asked for; a section runs from "# Name" to the next one */
    const char *p = text.data, *end = text.data + text.len;
    bool keep = false;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        if (end - p >= 2 && p[0] == '#' && p[1] == ' ') {
            size_t n = (size_t)(next - p) - 2;
            while (n && (p[2 + n - 1] == '\r' || p[2 + n - 1] == '\n')) n--;
            keep = section_wanted(cmd, p + 2, n);
            if (keep && sel.len) sl__buf_puts(&sel, "\r\n");
        }
        bool blank = next - p <= 2 && (p[0] == '\r' || p[0] == '\n');
        if (keep && !blank) sl__buf_append(&sel, p, (size_t)(next - p));
        p = next;
    }
    if (text.failed || sel.failed)
        sl__resp_error(out, "ERR out of memory");
    else
        sl__resp_bulk(out, sel.data, sel.len);
    sl__buf_free(&text);
    sl__buf_free(&sel);
    return 0;
}

/* ---- COMMAND and CONFIG ------------------------------------------------------------ */

static size_t nflags(const cmd_def *d) {
    size_t n = 0;
    while (n < 3 && d->flags[n]) n++;
    return n;
}

/* The key flags of every command here with a key: it reads and updates the
 * key's state (Redis's CMD_KEY_FULL_ACCESS, what a module command with
 * first/last/step gets). */
static const char *const key_flags[] = {"RW", "access", "update"};
#define NKEY_FLAGS (sizeof key_flags / sizeof key_flags[0])

static void key_flags_reply(sl__buf *out) {
    sl__resp_array(out, NKEY_FLAGS);
    for (size_t i = 0; i < NKEY_FLAGS; i++) sl__resp_simple(out, key_flags[i]);
}

/* The one key spec of a command with a key at first_key (Redis 7's legacy
 * range spec, RESP2 form: maps flattened). */
static void key_spec(sl__buf *out, const cmd_def *d) {
    sl__resp_array(out, 6);
    bulk_str(out, "flags");
    key_flags_reply(out);
    bulk_str(out, "begin_search");
    sl__resp_array(out, 4);
    bulk_str(out, "type");
    bulk_str(out, "index");
    bulk_str(out, "spec");
    sl__resp_array(out, 2);
    bulk_str(out, "index");
    sl__resp_int(out, d->first_key);
    bulk_str(out, "find_keys");
    sl__resp_array(out, 4);
    bulk_str(out, "type");
    bulk_str(out, "range");
    bulk_str(out, "spec");
    sl__resp_array(out, 6);
    bulk_str(out, "lastkey");
    sl__resp_int(out, d->last_key < 0 ? d->last_key : d->last_key - d->first_key);
    bulk_str(out, "keystep");
    sl__resp_int(out, d->key_step);
    bulk_str(out, "limit");
    sl__resp_int(out, 0);
}

/* COMMAND GETKEYS / GETKEYSANDFLAGS name arg...: the keys of that command
 * line, with Redis 7's errors: one key, or (DEL: last_key -1) every
 * argument from first_key on. */
static void command_getkeys(sl__buf *out, const sl__resp_command *cmd, bool with_flags) {
    if (cmd->argc < 4) {
        wrong_args(out, with_flags ? "command|getkeysandflags" : "command|getkeys");
        return;
    }
    const cmd_def *d = find_command(cmd->argv[2], cmd->argl[2]);
    size_t n = cmd->argc - 2; /* the command line asked about */
    if (!d) {
        sl__resp_error(out, "ERR Invalid command specified");
    } else if (d->first_key <= 0) {
        sl__resp_error(out, "ERR The command has no key arguments");
    } else if (d->arity > 0 ? n != (size_t)d->arity : n < (size_t)-d->arity) {
        sl__resp_error(out, "ERR Invalid number of arguments specified for command");
    } else if ((size_t)d->first_key >= n) {
        sl__resp_error(out, "ERR Invalid arguments specified for command");
    } else {
        size_t k = 2 + (size_t)d->first_key, end = d->last_key < 0 ? cmd->argc : k + 1;
        sl__resp_array(out, end - k);
        for (; k < end; k++) {
            if (with_flags) sl__resp_array(out, 2);
            sl__resp_bulk(out, cmd->argv[k], cmd->argl[k]);
            if (with_flags) key_flags_reply(out);
        }
    }
}

/* COMMAND INFO's 10-field entry (Redis 7). */
static void command_info(sl__buf *out, const cmd_def *d) {
    sl__resp_array(out, 10);
    sl__resp_bulk(out, d->name, d->len);
    sl__resp_int(out, d->arity);
    size_t nf = nflags(d);
    sl__resp_array(out, nf);
    for (size_t i = 0; i < nf; i++) sl__resp_simple(out, d->flags[i]);
    sl__resp_int(out, d->first_key);
    sl__resp_int(out, d->last_key);
    sl__resp_int(out, d->key_step);
    sl__resp_array(out, 0); /* ACL categories */
    sl__resp_array(out, 0); /* tips */
    if (d->first_key > 0) {
        sl__resp_array(out, 1);
        key_spec(out, d);
    } else {
        sl__resp_array(out, 0);
    }
    sl__resp_array(out, 0); /* subcommands */
}

/* COMMAND DOCS's map (flattened, RESP2), as redis-cli reads it for its help. */
static void command_docs(sl__buf *out, const cmd_def *d) {
    sl__resp_bulk(out, d->name, d->len);
    sl__resp_array(out, 8);
    bulk_str(out, "summary");
    bulk_str(out, d->summary);
    bulk_str(out, "since");
    bulk_str(out, d->since);
    bulk_str(out, "group");
    bulk_str(out, d->group);
    bulk_str(out, "arguments");
    sl__resp_array(out, d->nargs);
    for (size_t i = 0; i < d->nargs; i++) {
        const arg_doc *a = &d->args[i];
        sl__resp_array(out, a->optional ? 6 : 4);
        bulk_str(out, "name");
        bulk_str(out, a->name);
        bulk_str(out, "type");
        bulk_str(out, a->type);
        if (a->optional) {
            bulk_str(out, "flags");
            sl__resp_array(out, 1);
            sl__resp_simple(out, "optional");
        }
    }
}

static int cmd_command(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    if (cmd->argc == 1) {
        sl__resp_array(out, NCOMMANDS);
        for (size_t i = 0; i < NCOMMANDS; i++) command_info(out, &commands[i]);
        return 0;
    }
    const char *sub = cmd->argv[1];
    size_t n = cmd->argl[1];
    if (IEQ(sub, n, "count")) {
        if (cmd->argc != 2)
            wrong_args(out, "command|count");
        else
            sl__resp_int(out, (int64_t)NCOMMANDS);
    } else if (IEQ(sub, n, "list")) {
        sl__resp_array(out, NCOMMANDS);
        for (size_t i = 0; i < NCOMMANDS; i++)
            sl__resp_bulk(out, commands[i].name, commands[i].len);
    } else if (IEQ(sub, n, "info")) {
        if (cmd->argc == 2) {
            sl__resp_array(out, NCOMMANDS);
            for (size_t i = 0; i < NCOMMANDS; i++) command_info(out, &commands[i]);
        } else {
            sl__resp_array(out, cmd->argc - 2);
            for (size_t i = 2; i < cmd->argc; i++) {
                const cmd_def *d = find_command(cmd->argv[i], cmd->argl[i]);
                if (d)
                    command_info(out, d);
                else
                    sl__resp_null(out);
            }
        }
    } else if (IEQ(sub, n, "getkeys")) {
        command_getkeys(out, cmd, false);
    } else if (IEQ(sub, n, "getkeysandflags")) {
        command_getkeys(out, cmd, true);
    } else if (IEQ(sub, n, "docs")) {
        if (cmd->argc == 2) {
            sl__resp_array(out, 2 * NCOMMANDS);
            for (size_t i = 0; i < NCOMMANDS; i++) command_docs(out, &commands[i]);
        } else {
            const cmd_def *found[SL__RESP_MAX_ARGS];
            size_t nfound = 0;
            for (size_t i = 2; i < cmd->argc; i++) {
                const cmd_def *d = find_command(cmd->argv[i], cmd->argl[i]);
                if (d) found[nfound++] = d; /* unknown names are left out, as in Redis */
            }
            sl__resp_array(out, 2 * nfound);
            for (size_t i = 0; i < nfound; i++) command_docs(out, found[i]);
        }
    } else {
        unknown_subcommand(out, cmd, "COMMAND");
    }
    return 0;
}

/* The parameters CONFIG GET knows: redis-benchmark asks for these two at start. */
static const char *const config_params[][2] = {{"save", ""}, {"appendonly", "no"}};
#define NCONFIG (sizeof config_params / sizeof config_params[0])

static int cmd_config(const sl__resp_context *ctx, const sl__resp_command *cmd, sl__buf *out) {
    (void)ctx;
    if (!IEQ(cmd->argv[1], cmd->argl[1], "get")) {
        unknown_subcommand(out, cmd, "CONFIG");
        return 0;
    }
    if (cmd->argc < 3) {
        wrong_args(out, "config|get");
        return 0;
    }
    /* exact names (any case) or "*"; anything else matches nothing (empty array) */
    bool hit[NCONFIG] = {false};
    size_t nhit = 0;
    for (size_t i = 2; i < cmd->argc; i++) {
        bool all = cmd->argl[i] == 1 && cmd->argv[i][0] == '*';
        for (size_t j = 0; j < NCONFIG; j++) {
            if (hit[j]) continue;
            if (all ||
                ieq(cmd->argv[i], cmd->argl[i], config_params[j][0], strlen(config_params[j][0]))) {
                hit[j] = true;
                nhit++;
            }
        }
    }
    sl__resp_array(out, 2 * nhit);
    for (size_t j = 0; j < NCONFIG; j++) {
        if (!hit[j]) continue;
        bulk_str(out, config_params[j][0]);
        bulk_str(out, config_params[j][1]);
    }
    return 0;
}
