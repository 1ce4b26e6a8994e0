/* version.c: sl_version(), the version libsluice was built as (see
 * sluice/version.h, generated from project(VERSION) by CMake). */
#include "sluice/version.h"

const char *sl_version(void) {
    return SLUICE_VERSION;
}
