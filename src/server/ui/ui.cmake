# ui.cmake: compiles the dashboard (GET /ui/, src/server/http/http_ui.c) into
# sluiced: index.html, app.js and app.css become C strings through
# scripts/embed.cmake, as the default config and the Lua script do.
set(SLUICE_UI_DIR ${CMAKE_CURRENT_SOURCE_DIR}/src/server/ui)
foreach(pair "index.html;sl__ui_index_html" "app.js;sl__ui_app_js" "app.css;sl__ui_app_css")
  list(GET pair 0 file)
  list(GET pair 1 name)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/ui_${name}.c)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${SLUICE_UI_DIR}/${file} -DOUT=${out} -DNAME=${name}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/embed.cmake
    DEPENDS ${SLUICE_UI_DIR}/${file} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/embed.cmake)
  target_sources(sluice_server PRIVATE ${out})
endforeach()
