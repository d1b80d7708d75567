# Installs the library for embedding: libtessera (every layer's objects), its headers under
# <prefix>/include/tessera/<layer>/ — named as the library itself names them, <tessera/runtime/device.hpp>
# — plus the umbrella header tessera/tessera.hpp, and the CMake package tessera::tessera
# found with find_package(tessera). Public dependencies are found again by the package config;
# private ones (xxHash, liburing) are only linked, never put on a consumer's include path.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)

foreach(layer IN LISTS TESSERA_LAYERS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera
    FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/tessera/tessera.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera)

install(TARGETS tessera tessera_openblas EXPORT tesseraTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${TESSERA_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tesseraConfig.cmake ${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  DESTINATION ${TESSERA_CMAKE_DIR})
