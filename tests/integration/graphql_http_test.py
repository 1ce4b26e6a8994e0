#!/usr/bin/env python3
"""graphql_http_test.py SLUICED SOURCE_DIR: POST /v1/graphql through the real sluiced (issue 17).

- examples/graphql.yaml loads as shipped (its listeners moved to free ports) and
  charges the seed's example query what docs/graphql.md says: 11 points
  (1,051 objects / 100) on `shop`, 1 point (51 requests / 100) on `github`.
- A points budget (token bucket of 5,000 that refills 1 point an hour, so every
  count is exact however slow the machine): a query is charged its cost and
  answered with it, the remaining points and the RateLimit fields; a query over
  what is left is refused (429, Retry-After) and charges nothing; JSON and
  application/graphql bodies, variables, operationName.
- Refused before anything is charged: a query that does not parse (400 with the
  parser's message and offset), one over max_cost (413 with its cost), one
  longer than the parser takes (413), a body that is not a GraphQL request;
  a cost that can never pass (no max_cost) is a 400.
- /metrics counts each outcome (sluice_graphql_queries_total) and the points.

With SLUICE_TEST_REDIS=1 the same tests run with the Redis store, on a
redis-server of their own. Standard library only."""
import json
import os
import re
import unittest

import harness
import sluiced_test
from harness import curl, metric

STORE = "store:\n  type: memory\n  max_memory: 64MiB\n"

CONFIG = harness.config_head() + """
limits:
  max_body_bytes: 256KiB
{store}
policies:
  - name: points
    algorithm: token_bucket
    rate: 1/h
    burst: 5000
    graphql:
      scheme: github
      max_cost: 4900
  - name: objects
    algorithm: gcra
    rate: 1/h
    burst: 100
    graphql:
      scheme: objects
      default_page: 7
  - name: plain
    algorithm: fixed_window
    rate: 10/h
"""

SEED = "query { viewer { repositories(first: 50) { issues(first: 20) { title } } } }"
# 1 + n connection requests: round((1 + n) / 100) points with the github scheme
WIDE = "query Wide($n: Int) { a(first: $n) { b(first: 1) { id } } }"


def use_redis_store():
    global STORE
    STORE = harness.private_store("graphql-test-redis-")


def post(s, query_string, body, content_type="application/json"):
    data = body if isinstance(body, bytes) else body.encode()
    return curl("-X", "POST", "-H", "Content-Type: " + content_type,
                s.url("/v1/graphql?" + query_string), data=data)


def gql(s, policy, key, query, variables=None, operation=None):
    req = {"query": query}
    if variables is not None:
        req["variables"] = variables
    if operation is not None:
        req["operationName"] = operation
    st, h, body = post(s, "policy=%s&key=%s" % (policy, key), json.dumps(req))
    return st, h, json.loads(body)


class Example(unittest.TestCase):
    """examples/graphql.yaml as shipped, on free ports."""

    def test_example_config(self):
        with open(os.path.join(sluiced_test.SRC, "examples", "graphql.yaml")) as f:
            text = f.read()
        text = re.sub(r"(?m)^listen:\n(  .*\n)+",
                      'listen:\n  http: 127.0.0.1:0\n  grpc: "off"\n  resp: 127.0.0.1:0\n', text)
        text = re.sub(r"(?m)^store:\n(  .*\n)+", STORE, text)
        s = sluiced_test.Server(text, literal=True)
        try:
            st, h, b = gql(s, "shop", "alice", SEED)
            self.assertEqual(st, 200, b)
            self.assertEqual((b["cost"], b["objects"], b["requests"]), (11, 1051, 51))
            self.assertEqual(b["remaining"], 989)
            st, h, b = gql(s, "github", "alice", SEED)
            self.assertEqual(st, 200, b)
            self.assertEqual((b["cost"], b["requests"], b["limit"]), (1, 51, 5000))
        finally:
            self.assertEqual(s.stop(), 0)


    def test_config_errors(self):
        bad = ("policies:\n  - name: g\n    algorithm: fixed_window\n    rate: 10/s\n"
               "    graphql:\n      scheme: shopify\n      divisor: 0\n"
               "      default_page: 99999999999\n      max_cost: -1\n      maxcost: 3\n")
        _, path = harness.temp_file("graphql-config-", "bad.yaml", bad)
        rc, _, err = sluiced_test.check_config(path=path)
        self.assertEqual(rc, 1, err)
        self.assertEqual(err.replace(path, "F").splitlines(), [
            'F:6: policies[0].graphql.scheme: unknown GraphQL cost scheme "shopify" (did you mean '
            'objects (Shopify charges per object; set a divisor)?)',
            "F:7: policies[0].graphql.divisor: 0 is out of range (1 to 1000000000000)",
            "F:8: policies[0].graphql.default_page: 99999999999 is out of range (0 to 1000000000)",
            'F:9: policies[0].graphql.max_cost: expected a number of points from 0 (no bound) to '
            '10^12, got "-1"',
            "F:10: policies[0].graphql.maxcost: unknown key (did you mean max_cost?)"])
        rules = ("policies:\n  - name: p\n    algorithm: fixed_window\n    rate: 10/s\n"
                 "rules:\n  - name: g\n    graphql: {scheme: github, max_cost: x}\n"
                 "    limits:\n      - {policy: p, by: global, cost: graphq}\n"
                 "      - {policy: p, by: route, cost: graphql}\n")
        with open(path, "w") as f:
            f.write(rules)
        _, _, err = sluiced_test.check_config(path=path)
        self.assertEqual(err.replace(path, "F").splitlines(), [
            'F:7: rules[0].graphql.max_cost: expected a number of points from 0 (no bound) to '
            '10^12, got "x"',
            'F:9: rules[0].limits[0].cost: expected a cost from 0 to 10^12, or graphql (the '
            'query\'s points), got "graphq"'])


class Budget(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = sluiced_test.Server(CONFIG, store=STORE)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0

    def test_charged_and_refused_over_what_is_left(self):
        st, h, b = gql(self.s, "points", "k1", WIDE, {"n": 4799})  # 4,800 requests: 48 points
        self.assertEqual(st, 200, b)
        self.assertEqual((b["cost"], b["requests"], b["remaining"]), (48, 4800, 4952))
        self.assertEqual(h["ratelimit-policy"], '"points";q=5000;w=18000000;sluice-rate="1/h"')
        self.assertTrue(h["ratelimit"].startswith('"points";r=4952;'), h)
        self.assertEqual(h["x-ratelimit-remaining"], "4952")
        st, h, b = gql(self.s, "points", "k1", WIDE, {"n": 479999})  # 4,800 points
        self.assertEqual(st, 200, b)
        self.assertEqual(b["remaining"], 152)
        # over what is left: refused, nothing charged
        st, h, b = gql(self.s, "points", "k1", WIDE, {"n": 15299})  # 153 points
        self.assertEqual(st, 429, b)
        self.assertEqual((b["allowed"], b["cost"], b["remaining"]), (False, 153, 152))
        self.assertIn("retry-after", h)
        st, h, b = gql(self.s, "points", "k1", WIDE, {"n": 15199})  # 152 points: all that is left
        self.assertEqual(st, 200, b)
        self.assertEqual((b["cost"], b["remaining"]), (152, 0))

    def test_application_graphql_and_operation_name(self):
        doc = "query A { x } query B { a(first: 250) { b(first: 2) { id } } }"
        st, _, body = post(self.s, "policy=objects&key=k2", doc, "application/graphql")
        self.assertEqual(st, 400, body)  # two operations, none named
        self.assertEqual(json.loads(body)["error"], "bad_query")
        self.assertIn("2 operations", json.loads(body)["message"])
        st, _, b = gql(self.s, "objects", "k2", doc, operation="B")
        self.assertEqual(st, 400, b)  # 250 + 250 x 2 objects, more than the bucket holds
        self.assertEqual((b["error"], b["cost"]), ("cost_exceeds_limit", 750))
        st, _, b = gql(self.s, "objects", "k2", doc, operation="A")
        self.assertEqual(st, 200, b)
        self.assertEqual((b["cost"], b["remaining"]), (1, 99))
        # a Relay connection without first/last counts default_page (7) objects, b and c one each
        st, _, body = post(self.s, "policy=objects&key=k2",
                           "{ a { edges { node { id } } } b { c { id } } }", "application/graphql")
        self.assertEqual(st, 200, body)
        b = json.loads(body)
        self.assertEqual((b["objects"], b["cost"], b["remaining"]), (9, 9, 90))

    def test_refused_before_anything_is_charged(self):
        st, _, b = gql(self.s, "points", "k3", "query { a(first: 1) { id } ")
        self.assertEqual(st, 400, b)
        self.assertEqual((b["error"], b["offset"]), ("bad_query", 27))
        self.assertEqual(b["message"], "Syntax Error: Expected Name, found <EOF>.")
        st, _, b = gql(self.s, "points", "k3", "{ a(first: $nope) { id } }")
        self.assertEqual(st, 400, b)
        self.assertIn('"$nope"', b["message"])
        st, _, b = gql(self.s, "points", "k3", WIDE, {"n": 500000})  # 5,000 points > max_cost
        self.assertEqual(st, 413, b)
        self.assertEqual((b["error"], b["cost"]), ("query_too_costly", 5000))
        self.assertIn("more than the maximum of 4900", b["message"])
        big = "{ " + "a " * 40000 + "}"  # 80 KB: over the parser's 64 KiB
        st, _, b = gql(self.s, "points", "k3", big)
        self.assertEqual(st, 413, b)
        self.assertEqual(b["error"], "query_too_large")
        for body, ctype, code in [('{"query": 3}', "application/json", 400),
                                  ('{"query": "{ a }", "variables": [1]}', "application/json", 400),
                                  ('{"query": "{ a }"} x', "application/json", 400),
                                  ('{ a }', "text/plain", 415)]:
            st, _, out = post(self.s, "policy=points&key=k3", body, ctype)
            self.assertEqual(st, code, (body, out))
        # nothing was charged: the key still has its whole bucket
        st, _, b = gql(self.s, "points", "k3", "{ a }")
        self.assertEqual((st, b["remaining"]), (200, 4999), b)

    def test_request_errors(self):
        st, _, _ = post(self.s, "policy=nope&key=a", '{"query":"{ a }"}')
        self.assertEqual(st, 404)
        st, _, body = post(self.s, "key=a", '{"query":"{ a }"}')  # no policy: by the rules
        self.assertEqual((st, json.loads(body)["error"]), (400, "missing_uri"))
        st, _, _ = post(self.s, "policy=points", '{"query":"{ a }"}')
        self.assertEqual(st, 400)
        st, h, _ = curl(self.s.url("/v1/graphql?policy=points&key=a"))
        self.assertEqual((st, h["allow"]), (405, "POST"))
        # a policy without a graphql: block takes the defaults (objects, divisor 1)
        st, _, b = gql(self.s, "plain", "k4", "{ a(first: 3) { id } }")
        self.assertEqual((st, b["cost"], b["remaining"]), (200, 3, 7), b)

    def test_metrics(self):
        gql(self.s, "points", "k5", "{ a }")
        gql(self.s, "points", "k5", "{")
        st, _, m = curl(self.s.url("/metrics"))
        self.assertEqual(st, 200)
        self.assertGreaterEqual(metric(m, "sluice_graphql_queries_total", policy="points",
                                       result="allowed"), 1)
        self.assertGreaterEqual(metric(m, "sluice_graphql_queries_total", policy="points",
                                       result="bad_query"), 1)
        self.assertGreaterEqual(metric(m, "sluice_graphql_cost_points_total", policy="points"), 1)
        self.assertIsNotNone(metric(m, "sluice_graphql_queries_total", policy="points",
                                    result="too_large"))
        # a cost the policy can never allow (no max_cost) counts as too_costly: not charged
        before = metric(m, "sluice_graphql_queries_total", policy="objects", result="too_costly")
        st, _, b = gql(self.s, "objects", "k6", "{ a(first: 101) { id } }")
        self.assertEqual((st, b["error"]), (400, "cost_exceeds_limit"))
        st, _, m = curl(self.s.url("/metrics"))
        self.assertEqual(metric(m, "sluice_graphql_queries_total", policy="objects",
                                result="too_costly"), before + 1)


RULES_CONFIG = harness.config_head() + """
{store}
identity:
  api_keys:
    file: {keys}
    header: X-API-Key
policies:
  - name: points
    algorithm: token_bucket
    rate: 1/h
    burst: 100
  - name: per_ip
    algorithm: token_bucket
    rate: 1/h
    burst: 1000
rules:
  - name: graphql
    method: POST
    path: /graphql
    graphql:
      scheme: objects
      divisor: 10
      max_cost: 60
    limits:
      - {{policy: points, by: api_key, cost: graphql}}
      - {{policy: per_ip, by: ip}}
"""


class Rules(unittest.TestCase):
    """POST /v1/graphql without a policy: the rules decide, a limit with
    cost: graphql is charged the query's points (its rule's graphql: block)."""

    @classmethod
    def setUpClass(cls):
        cls.dir, keys = harness.temp_file("graphql-rules-", "keys.txt", "alice\nbob\ncarol\n")
        cls.s = sluiced_test.Server(RULES_CONFIG, store=STORE, keys=keys)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0

    def ask(self, key, query, uri="/graphql", method="POST"):
        return curl("-X", "POST", "-H", "Content-Type: application/json",
                    "-H", "X-Original-Method: " + method, "-H", "X-Original-URI: " + uri,
                    "-H", "X-Real-IP: 203.0.113.7", "-H", "X-API-Key: " + key,
                    self.s.url("/v1/graphql"), data=json.dumps({"query": query}).encode())

    def test_charged_by_rule(self):
        q = "{ a(first: 100) { b(first: 2) { id } } }"  # 300 objects: 30 points
        st, h, body = self.ask("alice", q)
        self.assertEqual(st, 200, body)
        b = json.loads(body)
        self.assertEqual((b["cost"], b["objects"]), (30, 300))
        self.assertIn('"points";q=100;', h["ratelimit-policy"])
        self.assertIn('"points";r=70;', h["ratelimit"])
        self.assertIn('"per_ip";r=999;', h["ratelimit"])
        st, _, body = self.ask("alice", q)
        self.assertEqual(st, 200, body)
        # 30 more is over what is left (40 - 30 = 10 after the next): refused, nothing charged
        st, _, body = self.ask("alice", q)
        self.assertEqual(st, 200, body)
        st, h, body = self.ask("alice", q)
        self.assertEqual(st, 403, body)
        self.assertEqual(json.loads(body)["cost"], 30)
        self.assertIn("retry-after", h)
        st, h, body = self.ask("alice", "{ a(first: 100) { id } }")  # 10 points: all that is left
        self.assertEqual(st, 200, body)
        self.assertIn('"points";r=0;', h["ratelimit"])

    def test_refused_by_rule(self):
        st, _, body = self.ask("bob", "{ a(first: 1000) { id } }")  # 100 points > max_cost 60
        self.assertEqual(st, 413, body)
        self.assertEqual((json.loads(body)["error"], json.loads(body)["cost"]),
                         ("query_too_costly", 100))
        st, _, body = self.ask("bob", "{ a(first: $n) { id } }")
        self.assertEqual((st, json.loads(body)["error"]), (400, "bad_query"))
        st, _, body = self.ask("bob", "{ a(")
        self.assertEqual((st, json.loads(body)["error"]), (400, "bad_query"))
        st, _, body = self.ask("mallory", "{ a }")
        self.assertEqual(st, 401, body)
        # nothing was charged to bob: a query of 60 points (the most) passes
        st, h, body = self.ask("bob", "{ a(first: 600) { id } }")
        self.assertEqual(st, 200, body)
        self.assertIn('"points";r=40;', h["ratelimit"])

    def test_auth_without_a_query(self):
        # GET /v1/auth has no query: a cost: graphql limit is charged the request's cost (1)
        def auth(key):
            return curl(self.s.url("/v1/auth"), "-H", "X-Original-Method: POST",
                        "-H", "X-Original-URI: /graphql", "-H", "X-Real-IP: 203.0.113.8",
                        "-H", "X-API-Key: " + key)
        st, _, body = auth("mallory")
        self.assertEqual(st, 401, body)
        st, h, body = auth("carol")
        self.assertEqual(st, 200, body)
        self.assertIn('"points";r=99;', h["ratelimit"])
        self.assertNotIn("cost", json.loads(body))


if __name__ == "__main__":
    sluiced_test.main(use_redis_store)
