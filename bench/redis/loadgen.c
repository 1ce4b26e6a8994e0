/* loadgen.c: the RESP load generator of bench/redis/cpu.sh. It sends the same
 * shape of load to every subject: C connections, each writing P decisions at
 * once and waiting for all their replies before it writes the next P (the
 * way redis-benchmark -P does), N decisions in all, the key of each drawn
 * uniformly from K keys (or the keys 0..N-1 in turn, --sequential). A
 * decision is one or more commands (INCRBY then EXPIRE is two); every
 * argument "{k}" is replaced by the decision's key, written with the same
 * length for every key ("key:%07u"), so the key bytes are the same for every
 * subject.
 *
 * Usage: loadgen -p PORT [-h 127.0.0.1] [-c 50] [-P 16] [-n 100000]
 *          [-k 100000] [--sequential] [--seed S] -- CMD ARG... [';;' CMD ARG...]
 * Prints one line on stdout: decisions=N replies=R errors=E seconds=S
 * rate=D/s (and first_error="..." when a reply was an error). Exit status 0
 * when every reply arrived (error replies included: the caller decides),
 * 1 on a connection or protocol failure, 2 on bad arguments.
 *
 * Standalone (no libsluice): cpu.sh builds it with `cc -O2` into its own
 * temporary directory. Not part of the product, so it uses plain libc and
 * exits on the first I/O failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KEY_FMT "key:%07u"
#define KEY_LEN 11 /* strlen("key:") + 7 digits */

struct conn {
    int fd;
    char *in;      /* bytes read and not yet parsed */
    size_t in_len; /* bytes in `in` */
    size_t in_cap; /* capacity of `in` */
    long awaiting; /* replies still due for the batch in flight */
};

/* one command of the template: argv with "{k}" marking the key */
struct cmd {
    int argc;
    char **argv;
};

static struct cmd cmds[8];
static int ncmds;
static long errors;
static char first_error[200];
static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what) {
    fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Appends one decision (every command of the template, for key `key`) in
 * RESP array form to buf (grown with realloc; the caller frees it). */
static void put_decision(char **buf, size_t *len, size_t *cap, unsigned key) {
    char k[32];
    snprintf(k, sizeof k, KEY_FMT, key);
    for (int c = 0; c < ncmds; c++) {
        size_t need = 32;
        for (int i = 0; i < cmds[c].argc; i++) need += strlen(cmds[c].argv[i]) + KEY_LEN + 32;
        if (*len + need > *cap) {
            *cap = (*len + need) * 2;
            *buf = realloc(*buf, *cap);
            if (!*buf) die("realloc");
        }
        *len += (size_t)sprintf(*buf + *len, "*%d\r\n", cmds[c].argc);
        for (int i = 0; i < cmds[c].argc; i++) {
            const char *a = strcmp(cmds[c].argv[i], "{k}") == 0 ? k : cmds[c].argv[i];
            *len += (size_t)sprintf(*buf + *len, "$%zu\r\n%s\r\n", strlen(a), a);
        }
    }
}

/* The length of one complete RESP2 reply at p[0..n), 0 when it is not
 * complete yet, -1 when it is not RESP. Counts error replies (top level or
 * nested) in `errors`. */
static long reply_len(const char *p, size_t n) {
    const char *eol = memchr(p, '\n', n);
    if (!eol) return 0;
    long head = eol - p + 1;
    switch (p[0]) {
    case '-':
        if (errors++ == 0)
            snprintf(first_error, sizeof first_error, "%.*s", (int)(head > 2 ? head - 2 : 0),
                     p + 1);
        return head;
    case '+':
    case ':':
        return head;
    case '$': {
        long l = strtol(p + 1, NULL, 10);
        if (l < 0) return head;
        return (size_t)(head + l + 2) <= n ? head + l + 2 : 0;
    }
    case '*': {
        long count = strtol(p + 1, NULL, 10), off = head;
        long saved = errors;
        for (long i = 0; i < count; i++) {
            long e = reply_len(p + off, n - (size_t)off);
            if (e <= 0) {
                errors = saved; /* counted again when complete */
                return e;
            }
            off += e;
        }
        return off;
    }
    default:
        return -1;
    }
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    int port = 0, nconn = 50, depth = 16, sequential = 0;
    long total = 100000, keys = 100000;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--sequential") == 0) {
            sequential = 1;
            continue;
        }
        if (i + 1 >= argc) goto usage;
        if (strcmp(a, "-h") == 0)
            host = argv[++i];
        else if (strcmp(a, "-p") == 0)
            port = atoi(argv[++i]);
        else if (strcmp(a, "-c") == 0)
            nconn = atoi(argv[++i]);
        else if (strcmp(a, "-P") == 0)
            depth = atoi(argv[++i]);
        else if (strcmp(a, "-n") == 0)
            total = atol(argv[++i]);
        else if (strcmp(a, "-k") == 0)
            keys = atol(argv[++i]);
        else if (strcmp(a, "--seed") == 0)
            rng = strtoull(argv[++i], NULL, 10) * 2654435761u + 1;
        else
            goto usage;
    }
    if (port <= 0 || nconn < 1 || depth < 1 || total < 1 || keys < 1 || keys > 9999999 || i >= argc)
        goto usage;
    for (; i < argc && ncmds < 8; ncmds++) {
        cmds[ncmds].argv = &argv[i];
        while (i < argc && strcmp(argv[i], ";;") != 0) i++, cmds[ncmds].argc++;
        i++; /* the ";;" */
        if (cmds[ncmds].argc == 0) goto usage;
    }

    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) goto usage;
    struct conn *cs = calloc((size_t)nconn, sizeof *cs);
    struct pollfd *pfd = calloc((size_t)nconn, sizeof *pfd);
    if (!cs || !pfd) die("calloc");
    for (int c = 0; c < nconn; c++) {
        cs[c].fd = socket(AF_INET, SOCK_STREAM, 0);
        if (cs[c].fd < 0 || connect(cs[c].fd, (struct sockaddr *)&sa, sizeof sa) != 0)
            die("connect");
        int one = 1;
        setsockopt(cs[c].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long sent = 0, replies = 0, next_key = 0, active = 0;
    char *out = NULL;
    size_t out_cap = 0;
    for (;;) {
        /* every idle connection writes its next batch */
        for (int c = 0; c < nconn; c++) {
            if (cs[c].awaiting > 0 || sent >= total) continue;
            size_t len = 0;
            long b;
            for (b = 0; b < depth && sent < total; b++, sent++) {
                unsigned key = sequential ? (unsigned)(next_key++ % keys)
                                          : (unsigned)(xorshift() % (uint64_t)keys);
                put_decision(&out, &len, &out_cap, key);
            }
            for (size_t off = 0; off < len;) {
                ssize_t w = write(cs[c].fd, out + off, len - off);
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) die("write");
                off += (size_t)w;
            }
            cs[c].awaiting = b * ncmds;
            active++;
        }
        if (active == 0) break;
        int np = 0;
        for (int c = 0; c < nconn; c++) {
            pfd[c].fd = cs[c].awaiting > 0 ? cs[c].fd : -1;
            pfd[c].events = POLLIN;
            np++;
        }
        if (poll(pfd, (nfds_t)np, 60000) <= 0) die("poll (no reply for 60 s?)");
        for (int c = 0; c < nconn; c++) {
            if (!(pfd[c].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            struct conn *k = &cs[c];
            if (k->in_cap - k->in_len < 65536) {
                k->in_cap = k->in_cap * 2 + 65536;
                k->in = realloc(k->in, k->in_cap);
                if (!k->in) die("realloc");
            }
            ssize_t r = read(k->fd, k->in + k->in_len, k->in_cap - k->in_len);
            if (r == 0) {
                errno = ECONNRESET;
                die("read (the server closed the connection)");
            }
            if (r < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                die("read");
            }
            k->in_len += (size_t)r;
            size_t off = 0;
            for (;;) {
                long l = reply_len(k->in + off, k->in_len - off);
                if (l < 0) {
                    fprintf(stderr, "loadgen: not a RESP reply: %.40s\n", k->in + off);
                    exit(1);
                }
                if (l == 0) break;
                off += (size_t)l;
                replies++;
                if (--k->awaiting == 0) {
                    active--;
                    break;
                }
            }
            memmove(k->in, k->in + off, k->in_len - off);
            k->in_len -= off;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("decisions=%ld replies=%ld errors=%ld seconds=%.3f rate=%.0f", sent, replies, errors,
           secs, secs > 0 ? (double)sent / secs : 0.0);
    if (errors) printf(" first_error=\"%s\"", first_error);
    printf("\n");
    return 0;
usage:
    fprintf(stderr,
            "usage: loadgen -p PORT [-h HOST] [-c CONNS] [-P DEPTH] [-n DECISIONS] [-k KEYS] "
            "[--sequential] [--seed S] -- CMD ARG... [';;' CMD ARG...]\n");
    return 2;
}
