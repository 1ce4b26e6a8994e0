CMakeFiles/sluice_objects.dir/src/core/error.c.o: \
 /work/main/src/core/error.c /usr/include/stdc-predef.h \
 /work/main/include/sluice/error.h /work/main/include/sluice/export.h
