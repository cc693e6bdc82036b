# Finds every third-party package once, for all folders.

find_package(Threads REQUIRED)

if(SVDSERVE_PORTABLE)
  # Static archives and runtimes, for binaries that run where these packages are not installed.
  include(${CMAKE_CURRENT_LIST_DIR}/Portable.cmake)
endif()

find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
# libcrypto (SHA-256 of tokens, random tokens): already there as gRPC's own dependency.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(ZLIB REQUIRED)  # the factor entries' checksum
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
if(SVDSERVE_PORTABLE)
  svdserve_portable_header_only_spdlog()
else()
  find_package(spdlog REQUIRED)
endif()
find_package(prometheus-cpp CONFIG REQUIRED)
# hiredis (the Redis factor repository) has only pkg-config. Its find_library takes the archive
# in the portable build, like every other find there.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)

# LAPACK and BLAS for the CPU backend: OpenBLAS is both, and multithreaded.
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_package(LAPACK REQUIRED)
find_path(LAPACKE_INCLUDE_DIR lapacke.h PATH_SUFFIXES openblas REQUIRED)
# Debian builds OpenBLAS without LAPACKE; the C interface is its own library (liblapacke-dev).
find_library(LAPACKE_LIBRARY lapacke REQUIRED)
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread openblas REQUIRED)

if(SVDSERVE_PORTABLE)
  svdserve_portable_link_statically()
endif()

# LAPACKE and CBLAS as one imported target. LAPACKE resolves sgesdd_ from OpenBLAS, so OpenBLAS
# stays the one LAPACK/BLAS (and the one thread pool).
add_library(svdserve_lapack INTERFACE IMPORTED)
target_include_directories(svdserve_lapack SYSTEM INTERFACE ${LAPACKE_INCLUDE_DIR} ${CBLAS_INCLUDE_DIR})
target_link_libraries(svdserve_lapack INTERFACE ${LAPACKE_LIBRARY} ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES})
add_library(svdserve::lapack ALIAS svdserve_lapack)

# CUDA: optional. NVTX3 is header-only and comes with the toolkit.
if(NOT SVDSERVE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # The architectures every CUDA target builds for, unless -DCMAKE_CUDA_ARCHITECTURES or
    # $CUDAARCHS names others: sm_80 (A100), sm_90a (H100/H200: sm_90 plus the wgmma kernel's
    # Hopper-only instructions) and PTX for compute_90 (newer GPUs compile it at load, without
    # wgmma). A cache entry CMake filled with the compiler's own default ("CUDA architectures")
    # is nobody's choice and is replaced too.
    set(_svdserve_cuda_architectures "80-real;90a-real;90-virtual")
    get_property(_svdserve_cuda_architectures_help CACHE CMAKE_CUDA_ARCHITECTURES PROPERTY HELPSTRING)
    if(NOT DEFINED ENV{CUDAARCHS} AND (NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR
        _svdserve_cuda_architectures_help STREQUAL "CUDA architectures"))
      set(CMAKE_CUDA_ARCHITECTURES "${_svdserve_cuda_architectures}" CACHE STRING
        "CUDA architectures to build for (default ${_svdserve_cuda_architectures})" FORCE)
    endif()
    enable_language(CUDA)
    # CMake 3.25 (Debian 12) knows no C++20 flag for nvcc (3.26 does); teach it, so that
    # CUDA_STANDARD 20 works there too.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(SVDSERVE_WITH_CUDA ON)
  elseif(SVDSERVE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SVDSERVE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
if(NOT SVDSERVE_WITH_CUDA)
  set(SVDSERVE_WITH_CUDA OFF)
endif()
if(SVDSERVE_WITH_CUDA)
  message(STATUS "svdserve: CUDA backend ON (architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "svdserve: CUDA backend OFF")
endif()

find_path(NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
if(NVTX3_INCLUDE_DIR)
  message(STATUS "svdserve: NVTX ranges on (${NVTX3_INCLUDE_DIR})")
else()
  message(STATUS "svdserve: NVTX headers not found; ranges compile to nothing")
endif()
