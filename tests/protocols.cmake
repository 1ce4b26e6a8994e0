# The protocols through their ops tables alone (src/server/proto.h), with a
# request context filled by hand and no worker (tests/unit/test_proto.c).
sluice_unit_test(test_proto)

# A call whose caller writes its own state (policy/decide.h: sl__decide_call_new_own,
# the Envoy path's domain calls): the rest of its user bytes zeroed, even reused.
sluice_unit_test(test_call_own)
