# Empty dependencies file for sluice_objects.
# This may be replaced when dependencies are built.
