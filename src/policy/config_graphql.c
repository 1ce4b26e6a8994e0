/* config_graphql.c: a policy's `graphql:` block, how POST /v1/graphql turns
 * a query into the points it charges to the policy (docs/graphql.md,
 * docs/configuration.md):
 *
 *   graphql:
 *     scheme: github      # objects (default) | github
 *     divisor: 100        # raw count -> points (default: objects 1, github 100)
 *     default_page: 100   # page size of a connection without first/last
 *     max_cost: 5000      # points above which a query is refused (0: none)
 *
 * Every value is checked here, with the bounds in the messages; the cost
 * itself is libsluice's (sluice/graphql.h). */
#include <string.h>

#include "policy/config_parse.h"
#include "sluice/graphql.h"

enum { GQL_SCHEME, GQL_DIVISOR, GQL_DEFAULT_PAGE, GQL_MAX_COST, GQL_NKEYS };

static const char *const graphql_keys[] = {"scheme", "divisor", "default_page", "max_cost"};

static const char *const scheme_names[] = {"objects", "github"};

/* What other tools call the schemes, for "did you mean". */
static const sl__yaml_alias scheme_aliases[] = {
    {"shopify", "objects (Shopify charges per object; set a divisor)"},
    {"connections", "github (GitHub counts connection requests)"},
    {"requests", "github (GitHub counts connection requests)"},
};

/* The largest page size a connection may default to: a page is a count of
 * objects, and a billion per connection is beyond any real API's. */
#define DEFAULT_PAGE_MAX UINT64_C(1000000000)

static void graphql_value(sl__yaml *y, void *obj, int key, const char *path) {
    sl__policy_graphql *g = obj;
    uint64_t u;
    int i;
    switch (key) {
    case GQL_SCHEME:
        i = sl__yaml_enum_aliased(y, path, "GraphQL cost scheme", scheme_names, COUNT(scheme_names),
                                  scheme_aliases, COUNT(scheme_aliases));
        if (i >= 0) g->scheme = (uint8_t)(i == 1 ? SL_GQL_GITHUB : SL_GQL_OBJECTS);
        break;
    case GQL_DIVISOR:
        if (sl__yaml_uint(y, path, "a whole number from 1 to 10^12 (raw count per point)", 1,
                          (uint64_t)SL__GQL_POINTS_MAX, &u))
            g->divisor = u;
        break;
    case GQL_DEFAULT_PAGE:
        if (sl__yaml_uint(y, path, "a page size from 0 to 10^9", 0, DEFAULT_PAGE_MAX, &u))
            g->default_page = u;
        break;
    case GQL_MAX_COST:
        if (sl__yaml_uint(y, path, "a number of points from 0 (no bound) to 10^12", 0,
                          (uint64_t)SL__GQL_POINTS_MAX, &u))
            g->max_cost = u;
        break;
    }
}

void sl__config_policy_graphql(sl__config_parser *p, const char *path, sl__policy_graphql *g) {
    memset(g, 0, sizeof *g);
    g->default_page = 100;
    int seen[GQL_NKEYS] = {0};
    bool map = sl__yaml_is_map(&p->y);
    sl__yaml_section(&p->y, path, graphql_keys, COUNT(graphql_keys), graphql_value, g, seen,
                     "a mapping of scheme, divisor, default_page, max_cost");
    g->configured = map;
}
