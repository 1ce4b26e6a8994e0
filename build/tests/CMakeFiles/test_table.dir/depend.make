# Empty dependencies file for test_table.
# This may be replaced when dependencies are built.
