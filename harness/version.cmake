# Writes the version header with the commit the sources are at when the build runs (run by the
# hb_version target on every build; the header changes, and its users rebuild, only when the
# commit or its dirty state does). Inputs: SOURCE_DIR, TEMPLATE, OUTPUT, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE HB_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE HB_GIT_DIRTY
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT HB_GIT_COMMIT)
  set(HB_GIT_COMMIT "unknown")
elseif(HB_GIT_DIRTY)
  string(APPEND HB_GIT_COMMIT "-dirty")
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
