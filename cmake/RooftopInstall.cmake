# SPDX-License-Identifier: BSD-3-Clause
# Install + export: find_package(rooftop) gives rooftop::kernels (header-only, needs Kokkos).
include(CMakePackageConfigHelpers)

foreach(dir IN LISTS ROOFTOP_HEADER_DIRS)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${dir}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/rooftop"
          FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(TARGETS rooftop_kernels EXPORT rooftopTargets)
set(ROOFTOP_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/rooftop")
install(EXPORT rooftopTargets NAMESPACE rooftop:: DESTINATION "${ROOFTOP_CMAKE_DIR}")
configure_package_config_file(cmake/rooftopConfig.cmake.in "${PROJECT_BINARY_DIR}/rooftopConfig.cmake"
  INSTALL_DESTINATION "${ROOFTOP_CMAKE_DIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/rooftopConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/rooftopConfig.cmake" "${PROJECT_BINARY_DIR}/rooftopConfigVersion.cmake"
  DESTINATION "${ROOFTOP_CMAKE_DIR}")
