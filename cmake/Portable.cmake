# The portable build (SVDSERVE_PORTABLE=ON, preset "portable", .ci/bundle.sh): binaries built on
# Debian 12 that run on a GPU host with glibc, the NVIDIA driver and CUDA's cuBLAS/cuSOLVER, but
# no gRPC, protobuf, abseil, OpenCV, spdlog/fmt or OpenBLAS. Those link statically from Debian's
# .a files (OpenCV from shared/opencv-static), spdlog and fmt are header-only, libstdc++/libgcc
# and the CUDA runtime are static. What has no archive (libLerc, libprometheus-cpp-core) is
# installed into lib/, found through RPATH $ORIGIN/../lib.
#
# cmake/Dependencies.cmake includes this file before its find_package calls and then calls
#   svdserve_portable_header_only_spdlog()  instead of find_package(spdlog)
#   svdserve_portable_link_statically()     after the finds: points imported targets at archives
# and the top-level CMakeLists.txt calls svdserve_portable_install() after all folders.

# Archives first for every find_library: protobuf, c-ares, re2, OpenSSL, zlib, LAPACKE, OpenBLAS,
# and hiredis (pkg_check_modules finds its -l items with find_library).
set(CMAKE_FIND_LIBRARY_SUFFIXES .a ${CMAKE_FIND_LIBRARY_SUFFIXES})
set(Protobuf_USE_STATIC_LIBS ON)
set(OPENSSL_USE_STATIC_LIBS ON)
set(ZLIB_USE_STATIC_LIBS ON)
set(BLA_STATIC ON)

set(OpenCV_DIR "${PROJECT_SOURCE_DIR}/../shared/opencv-static/lib/cmake/opencv4"
  CACHE PATH "The static OpenCV of the portable build (see shared/opencv-static/README.md)")

# glibc is the one system library the GPU host is trusted to have (Ubuntu 24.04's is newer).
add_link_options(-static-libstdc++ -static-libgcc)
# lib/ of the bundle first; then the usual CUDA location, for hosts whose ld.so.conf lacks it.
# Built with the install RPATH: no relink or RPATH rewrite at install, no padded build RUNPATH.
set(CMAKE_INSTALL_RPATH "$ORIGIN/../lib;/usr/local/cuda/lib64")
set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)

# Link items that stay shared: glibc's parts (and gcc's libatomic). Never use their .a files.
set(_svdserve_system_libraries c m dl rt pthread util resolv atomic)

# spdlog::spdlog as a header-only target over header-only fmt: Debian has no libspdlog.a/libfmt.a.
macro(svdserve_portable_header_only_spdlog)
  find_package(fmt CONFIG REQUIRED)
  find_path(SPDLOG_INCLUDE_DIR spdlog/spdlog.h REQUIRED)
  add_library(spdlog::spdlog INTERFACE IMPORTED)
  set_target_properties(spdlog::spdlog PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${SPDLOG_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS SPDLOG_FMT_EXTERNAL
    INTERFACE_LINK_LIBRARIES "fmt::fmt-header-only;Threads::Threads")
endmacro()

# The archive beside a shared library (/x/libfoo.so.1.2 -> /x/libfoo.a), or "" if none.
function(_svdserve_archive_of library out_var)
  set(archive "")
  if(library MATCHES "^(.*/lib[^/]+)\\.so(\\.[0-9.]+)?$")
    if(EXISTS "${CMAKE_MATCH_1}.a")
      set(archive "${CMAKE_MATCH_1}.a")
    endif()
  endif()
  set(${out_var} "${archive}" PARENT_SCOPE)
endfunction()

# Points an imported target, and every imported target it links, at static archives. Debian's
# CMake configs of gRPC and abseil import only the .so files, although the .a files are installed
# beside them; a shared library without an archive is an error, not a silent dynamic dependency.
function(_svdserve_make_static target)
  get_property(visited GLOBAL PROPERTY _svdserve_static_visited)
  if(NOT TARGET ${target} OR target IN_LIST visited)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _svdserve_static_visited ${target})
  get_target_property(imported ${target} IMPORTED)
  get_target_property(type ${target} TYPE)
  if(NOT imported OR type STREQUAL "EXECUTABLE")
    return()
  endif()

  get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
  set(suffixes "")
  foreach(config IN LISTS configs)
    string(TOUPPER "_${config}" suffix)
    list(APPEND suffixes ${suffix})
  endforeach()
  foreach(suffix "" ${suffixes})
    get_target_property(location ${target} IMPORTED_LOCATION${suffix})
    if(location MATCHES "\\.so(\\.[0-9.]+)?$")
      _svdserve_archive_of("${location}" archive)
      if(NOT archive)
        message(FATAL_ERROR "SVDSERVE_PORTABLE: ${target} has no static archive beside ${location}")
      endif()
      set_property(TARGET ${target} PROPERTY IMPORTED_LOCATION${suffix} "${archive}")
      set_property(TARGET ${target} PROPERTY IMPORTED_SONAME${suffix})
    endif()
  endforeach()

  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT links)
    return()
  endif()
  set(rewritten "")
  foreach(item IN LISTS links)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" bare "${item}")
    if(TARGET ${bare})
      _svdserve_make_static(${bare})
    elseif(bare MATCHES "^-l(.+)$" AND NOT CMAKE_MATCH_1 IN_LIST _svdserve_system_libraries)
      # pkg-config style items (re2 comes through gRPC's Findre2.cmake as -lre2).
      find_library(_svdserve_archive_${CMAKE_MATCH_1} NAMES lib${CMAKE_MATCH_1}.a REQUIRED)
      set(item "${_svdserve_archive_${CMAKE_MATCH_1}}")
    elseif(bare MATCHES "\\.so(\\.[0-9.]+)?$")
      _svdserve_archive_of("${bare}" archive)
      if(NOT archive)
        message(FATAL_ERROR "SVDSERVE_PORTABLE: ${target} links ${bare}, which has no archive")
      endif()
      set(item "${archive}")
    endif()
    list(APPEND rewritten "${item}")
  endforeach()
  set_property(TARGET ${target} PROPERTY INTERFACE_LINK_LIBRARIES "${rewritten}")
endfunction()

function(svdserve_portable_link_statically)
  foreach(target gRPC::grpc++ gRPC::grpc++_reflection protobuf::libprotobuf)
    _svdserve_make_static(${target})
  endforeach()
  # libprotobuf.a's gzip streams need zlib; the shared library carried that itself.
  set_property(TARGET protobuf::libprotobuf APPEND PROPERTY INTERFACE_LINK_LIBRARIES ZLIB::ZLIB)

  if(NOT TARGET opencv_core)
    message(FATAL_ERROR "SVDSERVE_PORTABLE: OpenCV was not found through its CMake config")
  endif()
  get_target_property(opencv_type opencv_core TYPE)
  if(NOT opencv_type STREQUAL "STATIC_LIBRARY")
    message(FATAL_ERROR "SVDSERVE_PORTABLE needs the static OpenCV, but OpenCV_DIR=${OpenCV_DIR} "
      "is a shared one; point OpenCV_DIR at shared/opencv-static/lib/cmake/opencv4")
  endif()

  foreach(library IN LISTS HIREDIS_LINK_LIBRARIES)
    if(library MATCHES "\\.so(\\.[0-9.]+)?$")
      message(FATAL_ERROR "SVDSERVE_PORTABLE: ${library} is shared; install libhiredis-dev's archive")
    endif()
  endforeach()

  # OpenBLAS's LAPACK is Fortran: its archive needs the Fortran runtime, from gcc's archives too.
  foreach(library IN LISTS LAPACKE_LIBRARY LAPACK_LIBRARIES BLAS_LIBRARIES)
    if(library MATCHES "\\.so(\\.[0-9.]+)?$")
      message(FATAL_ERROR "SVDSERVE_PORTABLE: ${library} is shared; install the -dev package's archive")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libgfortran.a
    OUTPUT_VARIABLE gfortran OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libquadmath.a
    OUTPUT_VARIABLE quadmath OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${gfortran}" OR NOT IS_ABSOLUTE "${quadmath}")
    message(FATAL_ERROR "SVDSERVE_PORTABLE: libgfortran.a/libquadmath.a not found (install gfortran)")
  endif()
  set(BLAS_LIBRARIES ${BLAS_LIBRARIES} ${gfortran} ${quadmath} m PARENT_SCOPE)
  message(STATUS "svdserve: portable build; static gRPC, protobuf, abseil, OpenCV, OpenBLAS, "
    "hiredis, libstdc++, CUDA runtime; RPATH $ORIGIN/../lib")
endfunction()

# Executables (and nothing else) defined in a folder and the folders below it.
function(_svdserve_executables_under directory out_var)
  set(found "")
  get_property(targets DIRECTORY ${directory} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found ${target})
    endif()
  endforeach()
  get_property(subdirectories DIRECTORY ${directory} PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    _svdserve_executables_under(${subdirectory} below)
    list(APPEND found ${below})
  endforeach()
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

# The bundle: bin/ (server, CLI, every test and benchmark binary), config/, deploy/ (the load
# balancer test runs the nginx example, the Prometheus test the rules and dashboard), share/svdserve (protoset),
# tests/data/images, a CTestTestfile.cmake, and lib/ with the shared libraries a GPU host lacks.
function(svdserve_portable_install)
  set(programs svdserve svdserve-cli)
  set(tests "")
  if(BUILD_TESTING AND EXISTS ${PROJECT_SOURCE_DIR}/tests/CMakeLists.txt)
    _svdserve_executables_under(${PROJECT_SOURCE_DIR}/tests tests)
    install(TARGETS ${tests} RUNTIME DESTINATION bin)
    # The folder the tests were configured with (SVDSERVE_TEST_IMAGES), at the bundle's fixed place.
    install(DIRECTORY "${SVDSERVE_TEST_IMAGES}/" DESTINATION tests/data/images)
  endif()
  _svdserve_executables_under(${PROJECT_SOURCE_DIR}/bench benchmarks)
  if(benchmarks)
    install(TARGETS ${benchmarks} RUNTIME DESTINATION bin)
  endif()
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/config/ DESTINATION config)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/ DESTINATION deploy)

  # One CTest entry per test binary (benchmarks are installed, not run); the binaries find
  # config/ and the images beside bin/ themselves (tests/test_paths.hpp).
  set(ctest_file "# ctest --test-dir <bundle>: every test binary of the portable build.\n")
  foreach(test IN LISTS tests)
    if(NOT test MATCHES "_tests$")
      continue()
    endif()
    string(APPEND ctest_file "add_test(${test} \"\${CMAKE_CURRENT_LIST_DIR}/bin/${test}\")\n"
      "set_tests_properties(${test} PROPERTIES TIMEOUT 1200)\n")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/portable/CTestTestfile.cmake "${ctest_file}")
  install(FILES ${PROJECT_BINARY_DIR}/portable/CTestTestfile.cmake DESTINATION .)

  # Copy every shared library the binaries need except glibc's, the C++ runtime's (libLerc needs
  # libstdc++.so.6, which every host has) and CUDA's (the GPU host's own driver and toolkit).
  set(binaries "")
  foreach(target IN LISTS programs tests benchmarks)
    list(APPEND binaries "$<TARGET_FILE:${target}>")
  endforeach()
  install(CODE "set(svdserve_binaries \"${binaries}\")")
  install(CODE [[
    file(GET_RUNTIME_DEPENDENCIES
      EXECUTABLES ${svdserve_binaries}
      RESOLVED_DEPENDENCIES_VAR resolved
      UNRESOLVED_DEPENDENCIES_VAR unresolved
      PRE_EXCLUDE_REGEXES
        "^linux-vdso" "^ld-linux" "^lib(c|m|dl|rt|pthread|util|resolv|anl)\\.so"
        "^lib(stdc\\+\\+|gcc_s)\\.so"
        "^libcuda\\.so" "^libnvidia-" "^libcu(blas|blasLt|solver|solverMg|sparse|fft|rand)\\.so"
        "^libnvJitLink\\.so" "^libnvrtc"
      POST_EXCLUDE_REGEXES "^/lib64/ld-linux")
    if(unresolved)
      message(FATAL_ERROR "svdserve bundle: unresolved shared libraries: ${unresolved}")
    endif()
    foreach(library IN LISTS resolved)
      file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib" TYPE SHARED_LIBRARY
        FOLLOW_SYMLINK_CHAIN FILES "${library}")
    endforeach()
  ]])
endfunction()
