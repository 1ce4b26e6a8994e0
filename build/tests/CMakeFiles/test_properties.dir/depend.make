# Empty dependencies file for test_properties.
# This may be replaced when dependencies are built.
