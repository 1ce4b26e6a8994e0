/* gql_accept.c: for tests/integration/graphql_diff.sh. Reads documents from
 * stdin, each as a decimal byte length, a newline and that many bytes, and
 * prints per document "1" (sl_gql_parse accepts it) or "0 OFFSET MESSAGE". */
#include <stdio.h>
#include <stdlib.h>

#include "sluice/graphql.h"

int main(void) {
    size_t len;
    while (scanf("%zu", &len) == 1) {
        if (getchar() != '\n') return 2;
        char *buf = malloc(len + 1);
        if (!buf || fread(buf, 1, len, stdin) != len) return 2;
        sl_gql_limits lim;
        sl_gql_limits_init(&lim);
        lim.max_bytes = 1 << 20;
        sl_gql_doc *d = NULL;
        sl_gql_error e;
        int rc = sl_gql_parse(buf, len, &lim, &d, &e);
        if (rc == 0)
            printf("1\n");
        else
            printf("0 %zu %s\n", e.offset, e.message);
        sl_gql_free(d);
        free(buf);
    }
    return 0;
}
