# Empty dependencies file for sluice-demo.
# This may be replaced when dependencies are built.
