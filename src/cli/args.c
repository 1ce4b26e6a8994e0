/* args.c: long-option iteration and strict value parsers for the command
 * line (see args.h). Numbers are parsed exactly into integers: a decimal
 * such as "0.250" seconds becomes 250000000 ns, never a float. */
#include "cli/args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sluice/error.h"

void sl__cli_args_init(sl__cli_args *a, const char *cmd, int argc, char **argv, int first) {
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    a->i = first;
    a->name[0] = '\0';
}

void sl__cli_args_print_error(const sl__cli_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (a->name[0])
        fprintf(stderr, "%s: --%s: ", a->cmd, a->name);
    else
        fprintf(stderr, "%s: ", a->cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see %s --help)\n", a->cmd);
    va_end(ap);
}

int sl__cli_args_next(sl__cli_args *a, const sl__cli_opt *opts, int *index, const char **value) {
    a->name[0] = '\0';
    if (a->i >= a->argc) return 0;
    const char *arg = a->argv[a->i++];
    if (strcmp(arg, "-h") == 0) arg = "--help";
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
        return sl__cli_args_error(a, "unexpected argument '%s'", arg);
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    if (nlen >= sizeof a->name) return sl__cli_args_error(a, "unknown option '%.40s...'", arg);
    memcpy(a->name, name, nlen);
    a->name[nlen] = '\0';
    for (int k = 0; opts[k].name; k++) {
        if (strcmp(opts[k].name, a->name) != 0) continue;
        *index = k;
        if (!opts[k].metavar) {
            if (eq) return sl__cli_args_error(a, "takes no value");
            *value = NULL;
            return 1;
        }
        if (eq) {
            *value = eq + 1;
        } else {
            if (a->i >= a->argc)
                return sl__cli_args_error(a, "needs a value (%s)", opts[k].metavar);
            *value = a->argv[a->i++];
        }
        return 1;
    }
    char name_copy[sizeof a->name];
    memcpy(name_copy, a->name, sizeof name_copy);
    a->name[0] = '\0';
    return sl__cli_args_error(a, "unknown option '--%s'", name_copy);
}

int sl__cli_parse_decimal(const char *s, size_t len, int decimals, int64_t max_scaled, int64_t *out,
                          const char **why) {
    static const int64_t pow10[] = {1,      10,      100,      1000,      10000,
                                    100000, 1000000, 10000000, 100000000, 1000000000};
    size_t i = 0;
    if (len == 0) return *why = "empty", SL_EPARSE;
    if (s[0] == '-') return *why = "negative", SL_EPARSE;
    if (s[0] < '0' || s[0] > '9') return *why = "not a number", SL_EPARSE;
    int64_t ip = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        int d = s[i] - '0';
        if (ip > max_scaled || ip > (INT64_MAX - d) / 10) return *why = "too large", SL_EPARSE;
        ip = ip * 10 + d;
    }
    int64_t frac = 0;
    int nd = 0;
    if (i < len && s[i] == '.') {
        i++;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, nd++) {
            if (nd >= decimals) {
                /* keep scanning to tell "too many decimals" from garbage */
                continue;
            }
            frac = frac * 10 + (s[i] - '0');
        }
        if (nd == 0) return *why = "not a number", SL_EPARSE;
    }
    if (i != len) return *why = "not a number", SL_EPARSE;
    if (nd > decimals) {
        if (decimals == 0) return *why = "not a whole number", SL_EPARSE;
        static const char *msgs[] = {
            "",
            "more than 1 decimal place",
            "more than 2 decimal places",
            "more than 3 decimal places",
            "more than 4 decimal places",
            "more than 5 decimal places",
            "more than 6 decimal places",
            "more than 7 decimal places",
            "more than 8 decimal places",
            "more than 9 decimal places",
        };
        return *why = msgs[decimals], SL_EPARSE;
    }
    int64_t scale = pow10[decimals];
    if (ip > max_scaled / scale) return *why = "too large", SL_EPARSE;
    int64_t v = ip * scale + frac * pow10[decimals - nd];
    if (v > max_scaled) return *why = "too large", SL_EPARSE;
    *out = v;
    return 0;
}

int sl__cli_args_int(const sl__cli_args *a, const char *v, int64_t min, int64_t max, int64_t *out) {
    const char *why;
    int64_t x = 0;
    *out = 0;
    if (sl__cli_parse_decimal(v, strlen(v), 0, max, &x, &why) < 0 || x < min)
        return sl__cli_args_error(a, "expected a whole number from %lld to %lld, got '%s'",
                                  (long long)min, (long long)max, v);
    *out = x;
    return 0;
}

int sl__cli_args_int32(const sl__cli_args *a, const char *v, int min, int max, int *out) {
    int64_t x;
    *out = 0;
    int rc = sl__cli_args_int(a, v, min, max, &x);
    if (rc < 0) return rc;
    *out = (int)x; /* in [min, max]: fits */
    return 0;
}

int sl__cli_args_u64(const sl__cli_args *a, const char *v, uint64_t *out) {
    uint64_t x = 0;
    size_t n = strlen(v);
    *out = 0;
    if (n == 0 || n > 20) return sl__cli_args_error(a, "expected a whole number, got '%s'", v);
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return sl__cli_args_error(a, "expected a whole number, got '%s'", v);
        unsigned d = (unsigned)(v[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return sl__cli_args_error(a, "expected a whole number below 2^64, got '%s'", v);
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

int sl__cli_args_decimal(const sl__cli_args *a, const char *v, int decimals, int64_t min,
                         int64_t max, const char *expected, int64_t *out) {
    const char *why = "out of range";
    int64_t x = 0;
    *out = 0;
    int rc = sl__cli_parse_decimal(v, strlen(v), decimals, max, &x, &why);
    if (rc == 0 && x < min) rc = SL_EINVAL, why = "too small";
    if (rc < 0) return sl__cli_args_error(a, "expected %s, got '%s' (%s)", expected, v, why);
    *out = x;
    return 0;
}

int sl__cli_args_seconds(const sl__cli_args *a, const char *v, int64_t min_ms, int64_t max_ms,
                         const char *expected, int64_t *out_ns) {
    int64_t ms;
    *out_ns = 0;
    if (max_ms > ARGS_MAX_MS) max_ms = ARGS_MAX_MS; /* the product below cannot overflow */
    int rc = sl__cli_args_decimal(a, v, 3, min_ms, max_ms, expected, &ms);
    if (rc < 0) return rc;
    *out_ns = ms * SL_NS_PER_MS;
    return 0;
}

int sl__cli_args_rate(const sl__cli_args *a, const char *v, sl_rate *out) {
    sl_rate r = {0, 0};
    int rc = sl_rate_parse(v, &r);
    *out = rc == SL_OK ? r : (sl_rate){0, 0};
    if (rc != SL_OK)
        return sl__cli_args_error(a, "expected a rate such as 5/s, 100/m or 20/10s, got '%s' (%s)",
                                  v, sl_strerror(rc));
    return 0;
}

int sl__cli_args_algorithm(const sl__cli_args *a, const char *v, sl_algorithm *out) {
    *out = SL_FIXED_WINDOW;
    if (sl_algorithm_parse(v, out) != SL_OK)
        return sl__cli_args_error(
            a,
            "unknown algorithm '%s' (fixed_window, sliding_log, sliding_window, "
            "token_bucket, gcra, leaky_queue)",
            v);
    return 0;
}

int sl__cli_args_algorithms(const sl__cli_args *a, const char *v, sl_algorithm out[6], int *n) {
    *n = 0;
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name)
            return *n = 0, sl__cli_args_error(
                               a, "expected a comma-separated list of algorithms, got '%s'", v);
        memcpy(name, p, len);
        name[len] = '\0';
        sl_algorithm alg;
        int rc = sl__cli_args_algorithm(a, name, &alg);
        if (rc < 0) return *n = 0, rc;
        for (int k = 0; k < *n; k++)
            if (out[k] == alg) return *n = 0, sl__cli_args_error(a, "'%s' is listed twice", name);
        out[(*n)++] = alg; /* at most 6 distinct names exist */
        if (!comma) return 0;
        p = comma + 1;
    }
}

char *sl__cli_fmt_seconds(int64_t ns, int min_decimals, char *buf, size_t size) {
    const char *sign = "";
    uint64_t u = (uint64_t)ns;
    if (ns < 0) {
        sign = "-";
        u = 0 - u;
    }
    uint64_t ip = u / 1000000000u, frac = u % 1000000000u;
    char digits[10];
    snprintf(digits, sizeof digits, "%09llu", (unsigned long long)frac);
    int nd = 9;
    while (nd > min_decimals && digits[nd - 1] == '0') nd--;
    if (nd == 0)
        snprintf(buf, size, "%s%llu", sign, (unsigned long long)ip);
    else
        snprintf(buf, size, "%s%llu.%.*s", sign, (unsigned long long)ip, nd, digits);
    return buf;
}

char *sl__cli_fmt_milli(int64_t v, char *buf, size_t size) {
    const char *sign = v < 0 ? "-" : "";
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    snprintf(buf, size, "%s%llu.%03llu", sign, (unsigned long long)(u / 1000),
             (unsigned long long)(u % 1000));
    return buf;
}
