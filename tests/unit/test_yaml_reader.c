/* test_yaml_reader.c: the config loader's YAML reading layer
 * (src/policy/yaml_reader.c) on its own, with a tiny schema of its own: the
 * list-of-items walk (null is absent, the cap reported once, items of the
 * wrong kind skipped), required keys, unknown keys with "did you mean" and
 * their homes, typed scalars and their range messages, the sorted error
 * list and its bounds, nesting too deep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "policy/yaml_reader.h"
#include "helpers.h"

/* ---- a small schema: items: [{name: x, size: 1KiB, wait: 1s}, ...] ---- */

enum { K_NAME, K_SIZE, K_WAIT, K_MODE };
static const char *const item_keys[] = {"name", "size", "wait", "mode"};
static const char *const modes[] = {"fast", "careful"};
static const sl__yaml_home homes[] = {{"items", "at the top level"}};

typedef struct doc {
    char names[4][16];
    size_t nitems;
    uint64_t size;
    int64_t wait;
    int mode;
} doc;

static void item_value(sl__yaml *y, void *obj, int key, const char *path) {
    doc *d = obj;
    const char *s;
    switch (key) {
    case K_NAME:
        s = sl__yaml_scalar(y, path, "a name");
        if (s) snprintf(d->names[d->nitems], sizeof d->names[0], "%s", s);
        break;
    case K_SIZE:
        sl__yaml_size(y, path, 1024, 1 << 20, &d->size);
        break;
    case K_WAIT:
        sl__yaml_duration(y, path, SL_NS_PER_MS, 10 * SL_NS_PER_SEC, &d->wait);
        break;
    case K_MODE:
        d->mode = sl__yaml_enum(y, path, "mode", modes, COUNT(modes));
        break;
    }
}

static void one_item(sl__yaml *y, void *obj, size_t i, const char *path) {
    doc *d = obj;
    (void)i;
    int line = sl__yaml_line(y), seen[COUNT(item_keys)] = {0};
    sl__yaml_each_key(y, path, item_keys, COUNT(item_keys), item_value, d, seen);
    static const sl__yaml_required required[] = {{K_NAME, "every item needs a name"}};
    sl__yaml_missing(y, line, path, item_keys, seen, required, COUNT(required));
    d->nitems++;
}

static void top_value(sl__yaml *y, void *obj, int key, const char *path) {
    (void)key;
    static const sl__yaml_list list = {
        .what = "a list of items",
        .item = "an item (a mapping of name, size, wait)",
        .max = 3,
        .many = "items",
        .why = ": three is plenty",
    };
    sl__yaml_each_item(y, path, &list, one_item, obj);
}

/* Reads `text` as "t.yaml" (a mapping with the key items) into d; returns
 * the number of errors. */
static size_t read_doc(const char *text, doc *d, sl__config_errors *e) {
    static const char *const top_keys[] = {"items"};
    memset(d, 0, sizeof *d);
    d->mode = -2;
    e->n = 0;
    sl__yaml y;
    assert_int_equal(sl__yaml_open(&y, text, strlen(text), "t.yaml", e), 0);
    y.homes = homes;
    y.nhomes = COUNT(homes);
    int seen[1] = {0};
    if (sl__yaml_next(&y) && sl__yaml_next(&y) && sl__yaml_next(&y) && sl__yaml_is_map(&y))
        sl__yaml_each_key(&y, "", top_keys, 1, top_value, d, seen);
    sl__yaml_close(&y);
    sl__yaml_sort_errors(&y);
    return e->n;
}

static void expect(const sl__config_errors *e, size_t i, const char *want) {
    assert_true(i < e->n);
    assert_string_equal(e->msg[i], want);
}

static void test_items_load(void **state) {
    (void)state;
    doc d;
    sl__config_errors e;
    assert_int_equal(read_doc("items:\n  - {name: a, size: 2KiB, wait: 500ms, mode: fast}\n"
                              "  - name: b\n",
                              &d, &e),
                     0);
    assert_int_equal(d.nitems, 2);
    assert_string_equal(d.names[0], "a");
    assert_string_equal(d.names[1], "b");
    assert_int_equal(d.size, 2048);
    assert_int_equal(d.wait, 500 * SL_NS_PER_MS);
    assert_int_equal(d.mode, 0);
    /* a null list is an absent one */
    assert_int_equal(read_doc("items:\n", &d, &e), 0);
    assert_int_equal(d.nitems, 0);
}

static void test_list_shapes(void **state) {
    (void)state;
    doc d;
    sl__config_errors e;
    assert_int_equal(read_doc("items: 5\n", &d, &e), 1);
    expect(&e, 0, "t.yaml:1: items: expected a list of items, got \"5\"");
    /* an item of the wrong kind is reported and skipped; the cap once */
    assert_int_equal(read_doc("items:\n  - x\n  - {name: a}\n  - {name: b}\n  - {name: c}\n"
                              "  - {name: d}\n",
                              &d, &e),
                     2);
    expect(&e, 0,
           "t.yaml:2: items[0]: expected an item (a mapping of name, size, wait), got \"x\"");
    expect(&e, 1, "t.yaml:5: items[3]: too many items (at most 3: three is plenty)");
    assert_int_equal(d.nitems, 2);
}

static void test_keys(void **state) {
    (void)state;
    doc d;
    sl__config_errors e;
    /* missing keys are found at the end of the item, reported at its line
       and sorted there: before the later line's error */
    assert_int_equal(read_doc("items:\n  - size: 2KiB\n    nme: a\n    name: x\n    name: y\n"
                              "    items: 1\n    mode: fsat\n",
                              &d, &e),
                     4);
    expect(&e, 0, "t.yaml:3: items[0].nme: unknown key (did you mean name?)");
    expect(&e, 1, "t.yaml:5: items[0].name: duplicate key (first at line 4)");
    expect(&e, 2, "t.yaml:6: items[0].items: unknown key here (items belongs at the top level)");
    expect(&e, 3, "t.yaml:7: items[0].mode: unknown mode \"fsat\" (did you mean fast?)");
    assert_int_equal(read_doc("items:\n  - size: 2KiB\n    bogus: 1\n", &d, &e), 2);
    expect(&e, 0, "t.yaml:2: items[0].name: missing (every item needs a name)");
    expect(&e, 1, "t.yaml:3: items[0].bogus: unknown key (expected name, size, wait or mode)");
}

static void test_scalars(void **state) {
    (void)state;
    doc d;
    sl__config_errors e;
    assert_int_equal(read_doc("items:\n  - name: a\n    size: 64MB\n    wait: 1h\n"
                              "    mode: [a]\n",
                              &d, &e),
                     3);
    expect(&e, 0,
           "t.yaml:3: items[0].size: cannot parse \"64MB\" (expected a size such as 64KiB, "
           "256MiB, 1GiB or a number of bytes; units are 1024-based: KiB, MiB, GiB, TiB)");
    expect(&e, 1, "t.yaml:4: items[0].wait: \"1h\" is out of range (1ms to 10s)");
    expect(&e, 2, "t.yaml:5: items[0].mode: expected fast or careful, got a list");
    assert_int_equal(
        read_doc("items:\n  - {name: a, size: 1, wait: 99999999999999999999d}\n", &d, &e), 2);
    expect(&e, 0, "t.yaml:2: items[0].size: \"1\" is out of range (1KiB to 1MiB)");
    expect(&e, 1, "t.yaml:2: items[0].wait: \"99999999999999999999d\" is too large");
}

static void test_quote_and_suggest(void **state) {
    (void)state;
    char q[64];
    sl__yaml_quote(q, sizeof q, "a\"b\\c\x01", 6);
    assert_string_equal(q, "\"a\\\"b\\\\c\\x01\"");
    sl__yaml_quote(q, sizeof q, "0123456789012345678901234567890123456789XYZ", 43);
    assert_string_equal(q, "\"0123456789012345678901234567890123456789...\"");
    static const char *const names[] = {"token_bucket", "gcra", "fixed_window"};
    assert_string_equal(sl__yaml_suggest("tokenbucket", 11, names, 3), "token_bucket");
    assert_string_equal(sl__yaml_suggest("fixed", 5, names, 3), "fixed_window"); /* a prefix */
    assert_null(sl__yaml_suggest("zzzz", 4, names, 3));
    char list[64];
    sl__yaml_join_names(list, sizeof list, names, 3);
    assert_string_equal(list, "token_bucket, gcra or fixed_window");
}

static void test_error_list(void **state) {
    (void)state;
    sl__config_errors e = {0};
    sl__errors_add(&e, "f.yaml", 0, NULL, "no line %d", 1);
    sl__errors_add(&e, "f.yaml", 3, "a.b", "x");
    sl__errors_add(&e, "f.yaml", 4, "", "no field");
    assert_int_equal(e.n, 3);
    assert_string_equal(e.msg[0], "f.yaml: no line 1");
    assert_string_equal(e.msg[1], "f.yaml:3: a.b: x");
    assert_string_equal(e.msg[2], "f.yaml:4: no field");
    /* beyond the stored ones, errors are counted only */
    for (int i = 0; i < SL__CONFIG_MAX_ERRORS + 5; i++) sl__errors_add(&e, "f", i, NULL, "e");
    assert_int_equal(e.n, SL__CONFIG_MAX_ERRORS + 8);
    assert_string_equal(e.msg[SL__CONFIG_MAX_ERRORS - 1], "f:60: e");
    /* a message longer than its slot (a deep path in a nested file's error)
     * keeps its start and its end, what is wrong: the middle goes */
    sl__config_errors l = {0};
    char path[400];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    sl__errors_add(&l, "/tmp/s.yaml", 7, "domains", "%s:8: replaces: the reason at the end", path);
    const char *m = l.msg[0];
    assert_int_equal(strlen(m), sizeof l.msg[0] - 1);
    assert_int_equal(strncmp(m, "/tmp/s.yaml:7: domains: ppp", 27), 0);
    assert_non_null(strstr(m, "p...p"));
    const char *end = "ppp:8: replaces: the reason at the end";
    assert_string_equal(m + strlen(m) - strlen(end), end);
    /* one that just fits is kept whole */
    sl__config_errors f = {0};
    char fits[sizeof f.msg[0] - 3]; /* "f: " and 252 bytes: 255 */
    memset(fits, 'x', sizeof fits - 1);
    fits[sizeof fits - 1] = '\0';
    sl__errors_add(&f, "f", 0, NULL, "%s", fits);
    assert_int_equal(strlen(f.msg[0]), sizeof f.msg[0] - 1);
    assert_int_equal(strncmp(f.msg[0], "f: xxx", 6), 0);
    assert_null(strstr(f.msg[0], "..."));
}

static void test_nesting_and_syntax(void **state) {
    (void)state;
    doc d;
    sl__config_errors e;
    char deep[200] = "items: ";
    for (int i = 0; i < SL__YAML_MAX_DEPTH; i++) strcat(deep, "[");
    /* the item (a list, not a mapping) is skipped: skipping it goes too deep */
    assert_int_equal(read_doc(deep, &d, &e), 2);
    expect(&e, 0,
           "t.yaml:1: items[0]: expected an item (a mapping of name, size, wait), got a list");
    expect(&e, 1, "t.yaml:1: mappings and lists nested more than 32 deep");
    /* the syntax error stops the reading, after what was found before it */
    assert_int_equal(read_doc("items: [a\n", &d, &e), 2);
    expect(&e, 1,
           "t.yaml:2: yaml: did not find expected ',' or ']' at column 1 (while parsing a flow "
           "sequence at line 1)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items_load),
        cmocka_unit_test(test_list_shapes),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_quote_and_suggest),
        cmocka_unit_test(test_error_list),
        cmocka_unit_test(test_nesting_and_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
