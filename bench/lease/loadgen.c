/* loadgen.c: the HTTP load generator of bench/lease/run.sh. C connections
 * (one thread each, blocking keep-alive sockets), each running a closed loop
 * of "pairs" for S seconds:
 *   lease: POST /v1/acquire?policy=P&key=kI, then POST /v1/release with the
 *          lease id of its answer (both must be 200);
 *   check: GET /v1/check?policy=P&key=kI twice (200 or 429);
 * where I is the connection's index (each connection its own key). Prints one
 * line: mode=M pairs=N errors=E seconds=S rate=R/s.
 *
 * Usage: loadgen PORT MODE POLICY CLIENTS SECONDS
 * Standalone (no libsluice): run.sh builds it with cc -O2 -pthread. Not part
 * of the product: plain libc, exits on the first I/O failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port, clients;
static double seconds;
static const char *mode, *policy;
static atomic_long pairs, errors;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* Sends req and reads one response; returns its status, body in body. */
static int roundtrip(int fd, const char *req, size_t len, char *buf, size_t size,
                     const char **body) {
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, req + off, len - off);
        if (n <= 0) die("write");
        off += (size_t)n;
    }
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        ssize_t n = read(fd, buf + have, size - 1 - have);
        if (n <= 0) die("read");
        have += (size_t)n;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    const char *cl = strcasestr(buf, "Content-Length:");
    size_t clen = cl ? strtoul(cl + 15, NULL, 10) : 0;
    size_t need = (size_t)(end + 4 - buf) + clen;
    while (have < need) {
        ssize_t n = read(fd, buf + have, size - 1 - have);
        if (n <= 0) die("read");
        have += (size_t)n;
    }
    buf[have] = '\0';
    *body = end + 4;
    return atoi(buf + 9);
}

static void *run(void *arg) {
    long i = (long)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char req[512], buf[8192];
    const char *body;
    bool lease = strcmp(mode, "lease") == 0;
    double end = now_s() + seconds;
    long done = 0, bad = 0;
    while (now_s() < end) {
        if (lease) {
            int n = snprintf(req, sizeof req,
                             "POST /v1/acquire?policy=%s&key=k%ld HTTP/1.1\r\nHost: x\r\n"
                             "Content-Length: 0\r\n\r\n",
                             policy, i);
            int st = roundtrip(fd, req, (size_t)n, buf, sizeof buf, &body);
            const char *l = strstr(body, "\"lease\":\"");
            if (st != 200 || !l) {
                bad++;
                continue;
            }
            char id[17];
            memcpy(id, l + 9, 16);
            id[16] = '\0';
            n = snprintf(req, sizeof req,
                         "POST /v1/release?policy=%s&key=k%ld&lease=%s HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 0\r\n\r\n",
                         policy, i, id);
            if (roundtrip(fd, req, (size_t)n, buf, sizeof buf, &body) != 200) bad++;
        } else {
            int n =
                snprintf(req, sizeof req,
                         "GET /v1/check?policy=%s&key=k%ld HTTP/1.1\r\nHost: x\r\n\r\n", policy, i);
            for (int k = 0; k < 2; k++) {
                int st = roundtrip(fd, req, (size_t)n, buf, sizeof buf, &body);
                if (st != 200 && st != 429) bad++;
            }
        }
        done++;
    }
    close(fd);
    atomic_fetch_add(&pairs, done);
    atomic_fetch_add(&errors, bad);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: loadgen PORT lease|check POLICY CLIENTS SECONDS\n");
        return 2;
    }
    port = atoi(argv[1]);
    mode = argv[2];
    policy = argv[3];
    clients = atoi(argv[4]);
    seconds = atof(argv[5]);
    pthread_t *t = calloc((size_t)clients, sizeof *t);
    double t0 = now_s();
    for (long i = 0; i < clients; i++) pthread_create(&t[i], NULL, run, (void *)i);
    for (int i = 0; i < clients; i++) pthread_join(t[i], NULL);
    double el = now_s() - t0;
    printf("mode=%s pairs=%ld errors=%ld seconds=%.3f rate=%.0f/s\n", mode, atomic_load(&pairs),
           atomic_load(&errors), el, (double)atomic_load(&pairs) / el);
    free(t);
    return 0;
}
