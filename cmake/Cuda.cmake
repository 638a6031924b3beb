# The CUDA backend's dependencies: nvcc, the CUDA toolkit (cudart, cuBLASLt), cuDNN 9 and NCCL 2.
# cuDNN and NCCL ship no CMake package: they are found with find_path/find_library in CUDNN_ROOT,
# NCCL_ROOT (CMake or environment variables), then the toolkit. SCALETRAIN_ENABLE_CUDA defaults to
# ON when all of them are found; ON without them is an error naming what is missing.
# CUDA sources are compiled as C++20 (-std=c++20): nvcc 13 supports it, CMake 3.25 does not know
# the flag (CUDA_STANDARD 20 is refused), so it is passed directly (scaletrain_cuda_options).

include(CheckLanguage)
check_language(CUDA)
set(SCALETRAIN_NVCC_FOUND OFF)
if(CMAKE_CUDA_COMPILER)
  set(SCALETRAIN_NVCC_FOUND ON)
  get_filename_component(_st_nvcc_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(_st_cuda_root "${_st_nvcc_bin}" DIRECTORY)
endif()

set(_st_cuda_hints "")
foreach(_root IN ITEMS "${CUDNN_ROOT}" "$ENV{CUDNN_ROOT}" "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "${_st_cuda_root}"
                       /usr/local/cuda)
  if(_root)
    list(APPEND _st_cuda_hints "${_root}")
  endif()
endforeach()

find_path(SCALETRAIN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${_st_cuda_hints} PATH_SUFFIXES include targets/x86_64-linux/include)
find_library(SCALETRAIN_CUDNN_LIBRARY cudnn HINTS ${_st_cuda_hints} PATH_SUFFIXES lib64 lib)
find_path(SCALETRAIN_NCCL_INCLUDE_DIR nccl.h HINTS ${_st_cuda_hints} PATH_SUFFIXES include targets/x86_64-linux/include)
find_library(SCALETRAIN_NCCL_LIBRARY nccl HINTS ${_st_cuda_hints} PATH_SUFFIXES lib64 lib)

set(_st_cuda_missing "")
if(NOT SCALETRAIN_NVCC_FOUND)
  list(APPEND _st_cuda_missing "nvcc (set CMAKE_CUDA_COMPILER)")
endif()
if(NOT SCALETRAIN_CUDNN_INCLUDE_DIR OR NOT SCALETRAIN_CUDNN_LIBRARY)
  list(APPEND _st_cuda_missing "cuDNN (cudnn.h, libcudnn: set CUDNN_ROOT)")
endif()
if(NOT SCALETRAIN_NCCL_INCLUDE_DIR OR NOT SCALETRAIN_NCCL_LIBRARY)
  list(APPEND _st_cuda_missing "NCCL (nccl.h, libnccl: set NCCL_ROOT)")
endif()

if(NOT DEFINED SCALETRAIN_ENABLE_CUDA)
  if(_st_cuda_missing)
    set(_st_cuda_default OFF)
  else()
    set(_st_cuda_default ON)
  endif()
  set(SCALETRAIN_ENABLE_CUDA ${_st_cuda_default} CACHE BOOL
      "Build the CUDA backend (cuDNN, cuBLASLt, NCCL); default ON when nvcc, cuDNN and NCCL are found")
endif()

set(SCALETRAIN_CUDNN_VERSION "")
set(SCALETRAIN_NCCL_VERSION "")
if(SCALETRAIN_ENABLE_CUDA)
  if(_st_cuda_missing)
    list(JOIN _st_cuda_missing ", " _st_m)
    message(FATAL_ERROR "SCALETRAIN_ENABLE_CUDA=ON but not found: ${_st_m}")
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)

  add_library(scaletrain::cudnn UNKNOWN IMPORTED)
  set_target_properties(scaletrain::cudnn PROPERTIES IMPORTED_LOCATION "${SCALETRAIN_CUDNN_LIBRARY}"
                                                     INTERFACE_INCLUDE_DIRECTORIES "${SCALETRAIN_CUDNN_INCLUDE_DIR}")
  add_library(scaletrain::nccl UNKNOWN IMPORTED)
  set_target_properties(scaletrain::nccl PROPERTIES IMPORTED_LOCATION "${SCALETRAIN_NCCL_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${SCALETRAIN_NCCL_INCLUDE_DIR}")

  file(STRINGS "${SCALETRAIN_CUDNN_INCLUDE_DIR}/cudnn_version.h" _v REGEX "define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*CUDNN_PATCHLEVEL ([0-9]+).*" "\\1.\\2.\\3"
         SCALETRAIN_CUDNN_VERSION "${_v}")
  file(STRINGS "${SCALETRAIN_NCCL_INCLUDE_DIR}/nccl.h" _v REGEX "define NCCL_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
         SCALETRAIN_NCCL_VERSION "${_v}")

  # Every translation unit sees the same launch path (backend/launch.hpp).
  add_compile_definitions(SCALETRAIN_HAVE_CUDA=1)

  # Flags for scaletrain's CUDA sources: C++20, relaxed constexpr for the functors, warnings (as
  # errors when SCALETRAIN_WARNINGS_AS_ERRORS is on).
  add_library(scaletrain_cuda_options INTERFACE)
  target_compile_options(scaletrain_cuda_options INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
  if(SCALETRAIN_WARNINGS_AS_ERRORS)
    target_compile_options(scaletrain_cuda_options INTERFACE
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endif()
