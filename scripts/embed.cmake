# embed.cmake -DIN=file -DOUT=file.c: writes the bytes of IN as the C string
# sl__default_config_text (NUL-terminated), for the embedded default config.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by scripts/embed.cmake: do not edit */\n"
  "const char sl__default_config_text[] = {${bytes} 0x00};\n")
