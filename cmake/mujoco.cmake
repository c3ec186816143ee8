# Finds MuJoCo 3.12.0's C library: under MUJOCO_ROOT (cache or environment; include/ and lib/), or in the
# project's venv (.venv, the official mujoco==3.12.0 wheel, which ships libmujoco.so.3.12.0 only).
set(MUJOCO_ROOT "$ENV{MUJOCO_ROOT}" CACHE PATH "MuJoCo install prefix (include/, lib/)")
set(_mj_hints "")
if(MUJOCO_ROOT)
  list(APPEND _mj_hints "${MUJOCO_ROOT}")
endif()
file(GLOB _mj_venv "${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/mujoco")
list(APPEND _mj_hints ${_mj_venv})
find_path(MUJOCO_INCLUDE_DIR mujoco/mujoco.h HINTS ${_mj_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(MUJOCO_LIBRARY NAMES mujoco libmujoco.so.3.12.0 HINTS ${_mj_hints} PATH_SUFFIXES lib . NO_DEFAULT_PATH)
if(NOT MUJOCO_INCLUDE_DIR OR NOT MUJOCO_LIBRARY)
  message(FATAL_ERROR "MuJoCo 3.12.0 not found: install it into the venv (python3 -m venv .venv && "
                      ".venv/bin/pip install mujoco==3.12.0) or pass -DMUJOCO_ROOT=<prefix with include/ and lib/>")
endif()
add_library(mujoco SHARED IMPORTED GLOBAL)
set_target_properties(mujoco PROPERTIES IMPORTED_LOCATION "${MUJOCO_LIBRARY}"
                      INTERFACE_INCLUDE_DIRECTORIES "${MUJOCO_INCLUDE_DIR}")
get_filename_component(MUJOCO_LIBDIR "${MUJOCO_LIBRARY}" DIRECTORY)
set(CMAKE_BUILD_RPATH "${MUJOCO_LIBDIR}")
set(CMAKE_INSTALL_RPATH "${MUJOCO_LIBDIR}")
message(STATUS "MuJoCo: ${MUJOCO_LIBRARY}")
