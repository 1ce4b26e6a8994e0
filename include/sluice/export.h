/* sluice/export.h: symbol visibility. The library is built with hidden
 * visibility by default; only declarations marked SL_API are exported. */
#ifndef SLUICE_EXPORT_H
#define SLUICE_EXPORT_H

#if defined(SLUICE_BUILDING) && defined(__GNUC__)
#define SL_API __attribute__((visibility("default")))
#else
#define SL_API
#endif

#endif
