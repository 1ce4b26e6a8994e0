# Empty dependencies file for test_worked_examples.
# This may be replaced when dependencies are built.
