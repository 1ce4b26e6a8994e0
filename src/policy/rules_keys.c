/* rules_keys.c: the table key of each limit a request passes, and its label.
 *
 * Table keys: every part of a key is a tag byte, a two-byte length and the
 * bytes ('k' API key, 'o' organisation, 'i' address prefix (16 bytes and the
 * prefix length), 'r' rule name, 'h' header value, 'g' global), so keys of
 * different sources or compositions never collide even in a shared policy.
 * Labels for /v1/top never carry an API key in clear: "key:" + its first
 * few characters + a fingerprint. */
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "policy/rules_internal.h"

#define FINGERPRINT_SEED UINT64_C(0x6b65792d66707231)

static bool put_part(sl__rules_answer *a, char tag, const void *data, size_t n) {
    if (a->used + 3 + n > SL__RULES_ARENA) return false;
    char *p = a->arena + a->used;
    p[0] = tag;
    p[1] = (char)(n >> 8);
    p[2] = (char)(n & 0xff);
    if (n) memcpy(p + 3, data, n);
    a->used += 3 + n;
    return true;
}

sl__rules_keyed sl__rules_limit_key(const sl__rules *r, const sl__request *req, const rule *ru,
                                    const limit *l, sl__rules_answer *a, const char **hval,
                                    size_t *hlen) {
    size_t start = a->used;
    *hval = NULL;
    *hlen = 0;
    for (unsigned k = 0; k < l->nsrc; k++) {
        bool full;
        switch (l->src[k]) {
        case SL__SRC_API_KEY:
            if (!a->key) {
                a->used = start;
                return SL__KEYED_SKIP;
            }
            full = !put_part(a, 'k', a->key->key, a->key->keylen);
            break;
        case SL__SRC_ORG:
            if (!a->key || !a->key->org) {
                a->used = start;
                return SL__KEYED_SKIP;
            }
            full = !put_part(a, 'o', a->key->org, a->key->orglen);
            break;
        case SL__SRC_IP: {
            if (!a->have_client) {
                a->used = start;
                return SL__KEYED_NO_CLIENT;
            }
            sl__addr pre;
            unsigned bits;
            sl__addr_prefix(&a->client, r->v4_bits, r->v6_bits, &pre, &bits);
            uint8_t b[17];
            memcpy(b, pre.b, 16);
            b[16] = (uint8_t)bits;
            full = !put_part(a, 'i', b, sizeof b);
            break;
        }
        case SL__SRC_ROUTE:
            full = !put_part(a, 'r', ru->name, ru->name_len);
            break;
        case SL__SRC_HEADER: {
            const sl__req_header *h = sl__rules_header(req->headers, req->nheaders, l->header);
            if (!h || h->value_len == 0) {
                a->used = start;
                return SL__KEYED_SKIP;
            }
            *hval = h->value;
            *hlen = h->value_len > SL__HEADER_KEY_MAX ? SL__HEADER_KEY_MAX : h->value_len;
            full = !put_part(a, 'h', *hval, *hlen);
            break;
        }
        default:
            full = !put_part(a, 'g', NULL, 0);
            break;
        }
        if (full) return SL__KEYED_FULL;
    }
    return SL__KEYED_OK;
}

static size_t append(char *buf, size_t size, size_t o, const char *s, size_t n) {
    for (size_t i = 0; i < n && o + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = (char)(c >= 0x20 && c < 0x7f ? c : '?');
    }
    if (o < size) buf[o] = '\0';
    return o;
}

size_t sl__rules_label(void *ctx, size_t i, char *buf, size_t size) {
    const sl__rules_answer *a = ctx;
    const item_meta *m = &a->meta[i];
    const limit *lim = m->lim;
    const rule *ru = m->rule;
    size_t o = 0;
    if (i >= a->n || !lim || size == 0) return 0;
    for (unsigned k = 0; k < lim->nsrc; k++) {
        if (k) o = append(buf, size, o, " ", 1);
        switch (lim->src[k]) {
        case SL__SRC_API_KEY: {
            const sl__apikey *key = a->key;
            size_t show = key->keylen / 3 < 6 ? key->keylen / 3 : 6;
            char fp[24];
            snprintf(fp, sizeof fp, "~%08llx",
                     (unsigned long long)(sl__hash(key->key, key->keylen, FINGERPRINT_SEED) >> 32));
            o = append(buf, size, o, "key:", 4);
            o = append(buf, size, o, key->key, show);
            o = append(buf, size, o, fp, strlen(fp));
            break;
        }
        case SL__SRC_ORG:
            o = append(buf, size, o, "org:", 4);
            o = append(buf, size, o, a->key->org, a->key->orglen);
            break;
        case SL__SRC_IP: {
            sl__addr pre;
            unsigned bits;
            sl__addr_prefix(&a->client, a->rules->v4_bits, a->rules->v6_bits, &pre, &bits);
            char t[SL__ADDR_FORMAT_MAX + 8];
            size_t tn = sl__addr_format(&pre, t);
            tn += (size_t)snprintf(t + tn, sizeof t - tn, "/%u",
                                   sl__addr_is_v4(&pre) ? bits - 96 : bits);
            o = append(buf, size, o, "ip:", 3);
            o = append(buf, size, o, t, tn);
            break;
        }
        case SL__SRC_ROUTE:
            o = append(buf, size, o, "route:", 6);
            o = append(buf, size, o, ru->name, ru->name_len);
            break;
        case SL__SRC_HEADER:
            o = append(buf, size, o, lim->header, lim->header_len);
            o = append(buf, size, o, ":", 1);
            o = append(buf, size, o, m->hval, m->hlen);
            break;
        default:
            o = append(buf, size, o, "global", 6);
            break;
        }
    }
    return o;
}
