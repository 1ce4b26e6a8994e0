/* config_check.c: the check of `--check-config` / `sluice check-config`
 * (see config_check.h). Building the sets is what sluiced's startup does
 * next with a loaded config (server.c): doing it here too means that "ok"
 * is said only of a config that startup accepts. */
#include <stdlib.h>

#include "policy/config_check.h"
#include "policy/domains.h"
#include "policy/policy.h"

void sl__config_print_errors(const sl__config_errors *e, FILE *err) {
    size_t shown = e->n < SL__CONFIG_MAX_ERRORS ? e->n : SL__CONFIG_MAX_ERRORS;
    for (size_t i = 0; i < shown; i++) fprintf(err, "%s\n", e->msg[i]);
    if (e->n > shown) fprintf(err, "... and %zu more errors\n", e->n - shown);
}

int sl__config_check_file(const char *path, FILE *out, FILE *err) {
    sl__config *cfg;
    sl__config_errors *errs = malloc(sizeof *errs);
    if (!errs) {
        fprintf(err, "%s: out of memory\n", path);
        return 1;
    }
    if (sl__config_load(path, &cfg, errs) != 0) {
        sl__config_print_errors(errs, err);
        free(errs);
        return 1;
    }
    free(errs);
    char msg[512];
    sl__policy_set *ps = NULL;
    sl__domain_set *ds = NULL;
    int rc = 0;
    if (sl__policy_set_create(cfg, NULL, 0, &ps, msg, sizeof msg) != 0 ||
        sl__domain_set_create(cfg, NULL, 0, &ds, msg, sizeof msg) != 0) {
        fprintf(err, "%s: %s\n", path, msg);
        rc = 1;
    } else {
        if (cfg->nleases)
            fprintf(out, "%s: ok (%zu policies, %zu concurrency limits)\n", path, cfg->npolicies,
                    cfg->nleases);
        else
            fprintf(out, "%s: ok (%zu policies)\n", path, cfg->npolicies);
    }
    sl__domain_set_release(ds);
    sl__policy_set_release(ps);
    sl__config_free(cfg);
    return rc;
}
