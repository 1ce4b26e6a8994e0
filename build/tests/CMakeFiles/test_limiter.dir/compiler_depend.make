# Empty compiler generated dependencies file for test_limiter.
# This may be replaced when dependencies are built.
