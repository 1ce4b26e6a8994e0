# The Debian package (packaging/): `tests/integration/deb_test.sh` builds it
# with CPack from this build, installs it into a fresh root with dpkg --root,
# runs the installed sluiced, checks sluiced.service (systemd-analyze) and runs
# lintian. Label install: it runs in `make test-integration` on the normal
# build, not under ASan. notify_test.py: sluiced's sd_notify (Type=notify),
# under ASan too.
if(TARGET sluiced AND TARGET sluice_cli)
  add_test(NAME deb_package
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/deb_test.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(deb_package PROPERTIES LABELS "integration;install" TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()
# SYSTEMD_FOUND: packaging/packaging.cmake, libsystemd-dev (scripts/install-deps.sh)
if(SYSTEMD_FOUND)
  sluiced_test(notify_integration notify_test.py LABELS integration TIMEOUT 120)
endif()
