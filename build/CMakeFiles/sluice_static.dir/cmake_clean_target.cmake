file(REMOVE_RECURSE
  "libsluice.a"
)
