# Empty dependencies file for sluice_static.
# This may be replaced when dependencies are built.
