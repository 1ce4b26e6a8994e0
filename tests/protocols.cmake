# The protocols through their ops tables alone (src/server/proto.h), with a
# request context filled by hand and no worker (tests/unit/test_proto.c).
sluice_unit_test(test_proto)
