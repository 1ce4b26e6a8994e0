/* bench_graphql.c: microseconds to parse and cost a typical 2 KB GraphQL
 * query (sluice/graphql.h), the "cost before running it" of issue 17. The
 * query: a Relay-style dashboard page (viewer, repositories, issues, pull
 * requests, labels, comments), variables, two fragments and an inline
 * fragment, comments and whitespace as people write them. Prints, for
 * parse + cost (both schemes) and for parse alone, the median (and the
 * minimum) over runs of the mean over iterations.
 * Usage: bench_graphql [--quick] [--runs N] [--iters N] */
#include "bench_common.h"

#include "sluice/graphql.h"

static const char QUERY[] =
    "# The dashboard page: a user's repositories with their open issues and pull\n"
    "# requests, the labels of each, and the latest comments.\n"
    "query Dashboard($repos: Int = 20, $issues: Int = 10, $after: String, $withPRs: Boolean = "
    "true) {\n"
    "  viewer {\n"
    "    login\n"
    "    name\n"
    "    avatarUrl(size: 64)\n"
    "    repositories(first: $repos, after: $after, orderBy: {field: UPDATED_AT, direction: "
    "DESC}, ownerAffiliations: [OWNER, COLLABORATOR]) {\n"
    "      totalCount\n"
    "      pageInfo { hasNextPage endCursor }\n"
    "      edges {\n"
    "        cursor\n"
    "        node {\n"
    "          ...RepoSummary\n"
    "          issues(first: $issues, states: [OPEN], orderBy: {field: CREATED_AT, direction: "
    "DESC}) {\n"
    "            totalCount\n"
    "            nodes {\n"
    "              ...IssueSummary\n"
    "              comments(last: 3) {\n"
    "                nodes { id author { login } bodyText createdAt }\n"
    "              }\n"
    "            }\n"
    "          }\n"
    "          pullRequests(first: 5, states: OPEN) @include(if: $withPRs) {\n"
    "            nodes {\n"
    "              id\n"
    "              number\n"
    "              title\n"
    "              isDraft\n"
    "              author { login ... on User { name company } }\n"
    "              reviews(first: 5) { nodes { state author { login } } }\n"
    "              labels(first: 10) { nodes { name color } }\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  rateLimit { cost remaining resetAt }\n"
    "}\n"
    "\n"
    "fragment RepoSummary on Repository {\n"
    "  id\n"
    "  name\n"
    "  nameWithOwner\n"
    "  description\n"
    "  url\n"
    "  isPrivate\n"
    "  stargazerCount\n"
    "  forkCount\n"
    "  updatedAt\n"
    "  primaryLanguage { name color }\n"
    "  owner { login avatarUrl(size: 32) }\n"
    "  repositoryTopics(first: 5) { nodes { topic { name } } }\n"
    "}\n"
    "\n"
    "fragment IssueSummary on Issue {\n"
    "  id\n"
    "  number\n"
    "  title\n"
    "  state\n"
    "  createdAt\n"
    "  updatedAt\n"
    "  url\n"
    "  author { login avatarUrl(size: 32) }\n"
    "  assignees(first: 3) { nodes { login } }\n"
    "  labels(first: 10) { nodes { name color description } }\n"
    "  reactions(content: THUMBS_UP) { totalCount }\n"
    "  milestone { title dueOn }\n"
    "  body @skip(if: true)\n"
    "  bodyText\n"
    "  tracked: projectItems(first: 2, note: \"\"\"a block string argument, as clients\n"
    "    send persisted-query notes\"\"\") { totalCount }\n"
    "  timelineItems(first: 5, itemTypes: [CLOSED_EVENT, REOPENED_EVENT, LABELED_EVENT]) {\n"
    "    totalCount\n"
    "  }\n"
    "}\n";

static volatile uint64_t sink;

/* Mean ns per iteration of parse (+ cost when `cost`) over `iters`. */
static double run(int iters, int cost) {
    sl_gql_options obj, gh;
    sl_gql_options_init(&obj);
    sl_gql_options_init(&gh);
    gh.scheme = SL_GQL_GITHUB;
    int64_t t0 = bench_wall_ns();
    for (int i = 0; i < iters; i++) {
        sl_gql_doc *d = NULL;
        sl_gql_error e;
        if (sl_gql_parse(QUERY, sizeof QUERY - 1, NULL, &d, &e) != 0) {
            fprintf(stderr, "bench_graphql: %s at %zu\n", e.message, e.offset);
            exit(1);
        }
        if (cost) {
            sl_gql_cost_result a, b;
            if (sl_gql_cost(d, &obj, &a, &e) != 0 || sl_gql_cost(d, &gh, &b, &e) != 0) {
                fprintf(stderr, "bench_graphql: %s at %zu\n", e.message, e.offset);
                exit(1);
            }
            sink += a.points + b.points;
        }
        sl_gql_free(d);
    }
    return (double)(bench_wall_ns() - t0) / iters;
}

int main(int argc, char **argv) {
    int runs = 9, iters = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            runs = 5, iters = 5000;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_graphql [--quick] [--runs N] [--iters N]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 99 || iters < 1) return 2;
    sl_gql_doc *d = NULL;
    sl_gql_error e;
    sl_gql_cost_result r;
    sl_gql_options o;
    sl_gql_options_init(&o);
    if (sl_gql_parse(QUERY, sizeof QUERY - 1, NULL, &d, &e) != 0) {
        fprintf(stderr, "bench_graphql: %s at %zu\n", e.message, e.offset);
        return 1;
    }
    sl_gql_cost(d, &o, &r, &e);
    printf("query: %zu bytes; objects %llu, connection requests %llu\n", sizeof QUERY - 1,
           (unsigned long long)r.objects, (unsigned long long)r.requests);
    sl_gql_free(d);
    double both[99], parse_only[99];
    run(iters / 10 + 1, 1); /* warm up */
    for (int k = 0; k < runs; k++) {
        both[k] = run(iters, 1);
        parse_only[k] = run(iters, 0);
    }
    double both_min = both[0], parse_min = parse_only[0];
    for (int k = 1; k < runs; k++) {
        if (both[k] < both_min) both_min = both[k];
        if (parse_only[k] < parse_min) parse_min = parse_only[k];
    }
    printf("parse + cost (both schemes): %.2f us per query, median of %d runs x %d (min %.2f)\n",
           bench_median(both, runs) / 1000.0, runs, iters, both_min / 1000.0);
    printf("parse alone:                 %.2f us per query (min %.2f)\n",
           bench_median(parse_only, runs) / 1000.0, parse_min / 1000.0);
    return (int)(sink & 0);
}
