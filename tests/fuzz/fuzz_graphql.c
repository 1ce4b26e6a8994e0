/* fuzz_graphql.c: libFuzzer target for the GraphQL parser and the cost walk
 * (include/sluice/graphql.h). Properties: no crash, leak or overflow on any
 * input under tight bounds; a refusal names a kind and an offset within the
 * input; an accepted document costs under both schemes with a known code,
 * at least one point, and SL_ECOST only above max_cost. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/graphql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl_gql_limits lim;
    sl_gql_limits_init(&lim);
    lim.max_bytes = 4096;
    lim.max_depth = 24;
    lim.max_nodes = 2000;
    lim.max_expanded = 20000;
    sl_gql_doc *d = NULL;
    sl_gql_error e;
    int rc = sl_gql_parse((const char *)data, size, &lim, &d, &e);
    if (rc != 0) {
        if (rc != SL_EPARSE || d || e.kind == SL_GQL_OK || !e.message[0]) abort();
        if (e.offset > size && e.kind != SL_GQL_ESIZE) abort();
        return 0;
    }
    sl_gql_var vars[] = {{"first", 3}, {"n", 1000000}, {"a", 0}};
    const char *const conns[] = {"a", "edges", NULL};
    for (int scheme = 0; scheme < 2; scheme++) {
        sl_gql_options o;
        sl_gql_options_init(&o);
        o.scheme = scheme ? SL_GQL_GITHUB : SL_GQL_OBJECTS;
        o.vars = vars;
        o.nvars = 3;
        o.connections = scheme ? conns : NULL;
        o.max_cost = scheme ? 0 : 5000;
        o.default_page = size % 7 ? 100 : UINT64_MAX;
        sl_gql_cost_result r;
        rc = sl_gql_cost(d, &o, &r, &e);
        if (rc == SL_OK || rc == SL_ECOST) {
            if (r.points == 0) abort();
            if (rc == SL_ECOST && (r.points <= o.max_cost || e.kind != SL_GQL_ETOO_COSTLY)) abort();
        } else if (rc != SL_EPARSE || e.kind == SL_GQL_OK) {
            abort();
        }
    }
    sl_gql_free(d);
    return 0;
}
