# install-generated.cmake -- run by `cmake --install` (install(SCRIPT) in
# CMakeLists.txt, after an install(CODE) that sets the MP_* variables).
# Here CMAKE_INSTALL_PREFIX is the final prefix, --prefix included, so the
# absolute paths written into memplan.pc and memplan/_install.py are where
# the files really land.  file(INSTALL) adds $DESTDIR and records the files
# in install_manifest.txt.

get_filename_component(MP_PREFIX "${CMAKE_INSTALL_PREFIX}" ABSOLUTE)
# MP_FULL_*: absolute paths; MP_PC_*: the same in memplan.pc, relative to
# ${prefix} where possible so that pkg-config --define-prefix can relocate.
foreach(d LIBDIR INCLUDEDIR PYTHON_DIR)
  if(IS_ABSOLUTE "${MP_${d}}")
    set(MP_FULL_${d} "${MP_${d}}")
    set(MP_PC_${d} "${MP_${d}}")
  else()
    set(MP_FULL_${d} "${MP_PREFIX}/${MP_${d}}")
    set(MP_PC_${d} "\${prefix}/${MP_${d}}")
  endif()
endforeach()

string(STRIP "-lm ${MP_THREAD_LIBS}" MP_LIBS_PRIVATE)
configure_file("${MP_PC_IN}" "${MP_GEN_DIR}/memplan.pc" @ONLY)
file(INSTALL "${MP_GEN_DIR}/memplan.pc" DESTINATION "${MP_FULL_LIBDIR}/pkgconfig")

# memplan.lib loads ${LIBDIR}/libmemplan.so.0 when MEMPLAN_LIB is unset.
file(WRITE "${MP_GEN_DIR}/_install.py"
  "\"\"\"Written by cmake --install: where libmemplan was installed.\"\"\"\n"
  "LIBDIR = \"${MP_FULL_LIBDIR}\"\n")
file(INSTALL "${MP_GEN_DIR}/_install.py" DESTINATION "${MP_FULL_PYTHON_DIR}/memplan")
