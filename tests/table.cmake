# The keyed table's layout (src/core/table_slots.h): inline-key limits, growth
# during a multi-key check, random traffic against one state per key.
sluice_unit_test(test_table_layout)
