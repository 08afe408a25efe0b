# Included first by cmake --install (CMakeLists.txt): records in
# BFO_INSTALL_RECORD the directories of BFO_INSTALL_DIRS (relative to the
# prefix), and their parents, that do not exist yet: the install makes
# them, and the uninstall target (uninstall.cmake) removes those it finds
# empty, and only those.  Nothing under DESTDIR (CPack's staging) is
# recorded: the uninstall target does not serve it.
if(NOT "$ENV{DESTDIR}" STREQUAL "")
  return()
endif()
set(made)
if(EXISTS "${BFO_INSTALL_RECORD}")
  file(STRINGS "${BFO_INSTALL_RECORD}" made)   # an install before, not yet uninstalled
endif()
foreach(rel ${BFO_INSTALL_DIRS})
  get_filename_component(d "${CMAKE_INSTALL_PREFIX}/${rel}" ABSOLUTE)
  while(NOT EXISTS "${d}" AND NOT IS_SYMLINK "${d}")
    list(APPEND made "${d}")
    get_filename_component(d "${d}" DIRECTORY)
  endwhile()
endforeach()
list(REMOVE_DUPLICATES made)
string(REPLACE ";" "\n" text "${made}")
file(WRITE "${BFO_INSTALL_RECORD}" "${text}\n")
