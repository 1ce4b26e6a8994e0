# packaging.cmake: what the Debian package adds to the install rules (man
# pages, docs, the default config, sluiced.service), sd_notify for sluiced,
# and CPack's DEB generator behind `make deb` (docs/operations.md).
#
# Man pages and docs install with everything else (`cmake --install`). The
# files with absolute paths, /etc/sluice/sluice.yaml and
# /lib/systemd/system/sluiced.service, are in component `deb`, excluded from a
# plain install (which must never write /etc), and packaged by CPack below.

# ---- readiness: sd_notify from libsystemd, when it is there -----------------
# Without libsystemd-dev (or with -DSLUICE_SYSTEMD=OFF) sluiced builds and
# runs the same, minus the notifications.
option(SLUICE_SYSTEMD "sd_notify readiness for systemd (when libsystemd-dev is there)" ON)
if(SLUICE_SYSTEMD)
  pkg_check_modules(SYSTEMD IMPORTED_TARGET libsystemd)
endif()
if(TARGET sluiced AND SYSTEMD_FOUND)
  target_link_libraries(sluiced PRIVATE PkgConfig::SYSTEMD)
  target_compile_definitions(sluiced PRIVATE SLUICE_HAVE_SYSTEMD)
endif()

# ---- man pages, gzipped (-n: no name or time in the header, reproducible) ---
# One source each, plain roff written once: man/PAGE.in, with the version
# substituted here (configure_file), so nothing is needed to build them but
# gzip. tests/integration/man_test.py checks their option lists against
# --help (and sluice.yaml(5)'s keys against the config loader).
set(SLUICE_MAN_PAGES sluiced.8 sluice.1 sluice.yaml.5)
set(SLUICE_MAN_GZ)
foreach(page ${SLUICE_MAN_PAGES})
  set(in ${CMAKE_CURRENT_BINARY_DIR}/man/${page})
  configure_file(${CMAKE_CURRENT_LIST_DIR}/man/${page}.in ${in} @ONLY)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/man/${page}.gz)
  add_custom_command(OUTPUT ${out}
    COMMAND gzip -9n -c ${in} > ${out}
    DEPENDS ${in} VERBATIM)
  list(APPEND SLUICE_MAN_GZ ${out})
  string(REGEX REPLACE ".*\\." "" section ${page})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(sluice_man ALL DEPENDS ${SLUICE_MAN_GZ})

# ---- docs: README, docs/, examples; the Debian changelog and copyright -----
set(SLUICE_CHANGELOG_GZ ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${SLUICE_CHANGELOG_GZ}
  COMMAND gzip -9n -c ${CMAKE_CURRENT_LIST_DIR}/deb/changelog > ${SLUICE_CHANGELOG_GZ}
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/deb/changelog VERBATIM)
add_custom_target(sluice_changelog ALL DEPENDS ${SLUICE_CHANGELOG_GZ})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/DEVELOPERS.md
  ${PROJECT_SOURCE_DIR}/CHANGELOG.md
  ${CMAKE_CURRENT_LIST_DIR}/deb/copyright ${SLUICE_CHANGELOG_GZ}
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- the package's own files at absolute paths (component deb) -------------
install(FILES ${PROJECT_SOURCE_DIR}/examples/sluice.yaml DESTINATION /etc/sluice
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/sluiced.service DESTINATION /lib/systemd/system
  COMPONENT deb EXCLUDE_FROM_ALL)

# ---- CPack: one package, sluice_VERSION_ARCH.deb ----------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# a placeholder until the project has a maintainer address
set(CPACK_PACKAGE_CONTACT "sluice maintainers <sluice@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "rate limiting: library, decision server and command line")
# CPack writes the summary as the synopsis and indents this as the long text
set(CPACK_PACKAGE_DESCRIPTION "sluice answers one question for every request: has this client used up its
allowance? It ships libsluice (every rate-limiting algorithm, exact integer
arithmetic, keyed tables with bounded memory), sluiced (HTTP API, Redis
protocol with CL.THROTTLE, Envoy's gRPC rate limit service; memory or Redis
store), the sluice command line (simulations, a polite HTTP client) and
libsluice-client, with headers, static libraries and pkg-config files.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_LIST_DIR}/deb/conffiles
  ${CMAKE_CURRENT_LIST_DIR}/deb/postinst
  ${CMAKE_CURRENT_LIST_DIR}/deb/prerm
  ${CMAKE_CURRENT_LIST_DIR}/deb/postrm
  ${CMAKE_CURRENT_LIST_DIR}/deb/triggers)
# DESTDIR staging, so the absolute /etc and /lib destinations land in the package
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# every default component, then component deb
set(CPACK_INSTALL_CMAKE_PROJECTS
  "${PROJECT_BINARY_DIR};sluice;ALL;/"
  "${PROJECT_BINARY_DIR};sluice;deb;/")
set(CPACK_STRIP_FILES ON)
include(CPack)
