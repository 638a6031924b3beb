# Warning flags for scaletrain's own targets; CI turns them into errors.
add_library(scaletrain_warnings INTERFACE)
target_compile_options(scaletrain_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
if(SCALETRAIN_WARNINGS_AS_ERRORS)
  target_compile_options(scaletrain_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
