# embed.cmake -DIN=file -DOUT=file.c -DNAME=symbol: writes the bytes of IN as
# the NUL-terminated C string NAME (the embedded default config, the Redis
# store's Lua script), and their SHA1 in hex as the string NAME_sha1 (what
# Redis's SCRIPT LOAD answers for a script: EVALSHA needs it).
file(READ ${IN} hex HEX)
file(SHA1 ${IN} sha1)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by scripts/embed.cmake: do not edit */\n"
  "const char ${NAME}[] = {${bytes} 0x00};\n"
  "const char ${NAME}_sha1[] = \"${sha1}\";\n")
