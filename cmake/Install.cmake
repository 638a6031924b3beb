# What `cmake --install BUILD --prefix PREFIX` adds to the programs and data tools (their install(TARGETS) rules
# put them in PREFIX/bin):
#   PREFIX/share/scaletrain/jobs/       the job scripts (local/, slurm/), their READMEs and the configurations
#   PREFIX/share/scaletrain/tools/      the Python report and check tools (standard library only; the report
#                                       draws its plots where matplotlib is installed)
#   PREFIX/share/modulefiles/scaletrain/<version>.lua   the Lmod modulefile (`module use PREFIX/share/modulefiles`)
# The job scripts find the programs as PREFIX/share/scaletrain/../../bin (jobs/slurm/common.sh, st_layout), so
# bin/ and share/ are fixed names here. No CMake package of the C++ libraries is exported: their API is not
# stable yet.
set(_st_share share/scaletrain)

install(FILES ${PROJECT_SOURCE_DIR}/jobs/README.md DESTINATION ${_st_share}/jobs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/jobs/configs DESTINATION ${_st_share}/jobs FILES_MATCHING PATTERN "*.toml")
install(PROGRAMS ${PROJECT_SOURCE_DIR}/jobs/local/sweep.sh ${PROJECT_SOURCE_DIR}/jobs/local/train_fmnist.sh
        DESTINATION ${_st_share}/jobs/local)
file(GLOB _st_sbatch CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/jobs/slurm/*.sbatch)
install(PROGRAMS ${_st_sbatch} DESTINATION ${_st_share}/jobs/slurm)
# common.sh is sourced, not run.
install(FILES ${PROJECT_SOURCE_DIR}/jobs/slurm/common.sh ${PROJECT_SOURCE_DIR}/jobs/slurm/README.md
        DESTINATION ${_st_share}/jobs/slurm)

# The scaling report the sweeps run, the sweep checker and the loss comparison (jobs/README.md).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/perf/scaling_report.py
                 ${PROJECT_SOURCE_DIR}/tests/support/check_run_dirs.py
                 ${PROJECT_SOURCE_DIR}/tests/support/compare_losses.py
        DESTINATION ${_st_share}/tools)

# The modulefile is written at install time, when the prefix (--prefix, else CMAKE_INSTALL_PREFIX) is known.
# It finds the prefix from its own path, so a moved prefix still works; the prefix written into it is the fallback
# for a copy placed in a site's own module tree.
set(_st_module_in ${PROJECT_SOURCE_DIR}/cmake/scaletrain-modulefile.lua.in)
set(_st_module_out ${PROJECT_BINARY_DIR}/modulefile/${PROJECT_VERSION}.lua)
install(CODE "
  set(SCALETRAIN_VERSION \"${PROJECT_VERSION}\")
  set(SCALETRAIN_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${_st_module_in}\" \"${_st_module_out}\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/modulefiles/scaletrain\" TYPE FILE
       FILES \"${_st_module_out}\")
")
