# Precompiled headers shared by groups of targets: the first target of a group compiles the header
# once, the group's other targets reuse it (REUSE_FROM), which needs the same compile flags, so a
# group holds only targets that link the same libraries. GCC ignores a precompiled header whose
# flags differ; -Winvalid-pch (cmake/Warnings.cmake) says so, and CI makes that an error.
# SCALETRAIN_PRECOMPILED_HEADERS=OFF (the tsan preset) compiles every file on its own includes, so
# a missing #include still fails a build.
option(SCALETRAIN_PRECOMPILED_HEADERS "Share precompiled headers (GoogleTest, CLI11) within target groups" ON)

# scaletrain_precompile(TARGET GROUP HEADERS...): TARGET uses GROUP's precompiled HEADERS.
function(scaletrain_precompile target group)
  if(NOT SCALETRAIN_PRECOMPILED_HEADERS)
    return()
  endif()
  get_property(owner GLOBAL PROPERTY scaletrain_pch_owner_${group})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${ARGN})
    set_property(GLOBAL PROPERTY scaletrain_pch_owner_${group} ${target})
  endif()
endfunction()
