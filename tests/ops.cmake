# What an operator watches (issue 17; docs/operations.md, "Watching sluiced"):
# GET /v1/stats, the /ui/ dashboard's files and headers, `sluice top --once`
# (tests/integration/ops_test.py), the dashboard in headless Chromium
# (ui_browser), the Prometheus rules of examples/prometheus/ (promtool) and a
# real Prometheus scraping sluiced (prometheus_integration).
sluiced_test(ops_integration ops_test.py
             LABELS integration TIMEOUT 300
             ARGS $<TARGET_FILE:sluice_cli>)

# The dashboard in a real browser: headless Chromium (Debian's chromium)
# driven by playwright-core (tests/ui/package-lock.json, installed with npm ci
# into the top-level build/ui-node once). Its screenshot is kept as a test
# artefact: <build dir>/ui-artefacts/dashboard.png.
if(TARGET sluiced)
  add_test(NAME ui_browser
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ui/browser_test.sh
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/build
            ${PROJECT_BINARY_DIR}/ui-artefacts)
  set_tests_properties(ui_browser PROPERTIES LABELS "integration" TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()

# examples/prometheus as shipped: promtool check rules, promtool test rules
# (each alert with input series) and check config; then a real Prometheus
# (Debian's prometheus) scraping a live sluiced with those rules loaded, and
# promtool check metrics on the live /metrics.
add_test(NAME prometheus_rules
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/prometheus_rules.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(prometheus_rules PROPERTIES LABELS "unit" TIMEOUT 120)
sluiced_test(prometheus_integration prometheus_test.py LABELS integration TIMEOUT 600)
