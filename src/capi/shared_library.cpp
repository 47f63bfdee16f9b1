// libbertrt.so: the C API's objects come from the static library (linked whole); this file only
// gives the shared target a source of its own.
#include "bertrt/bertrt.h"
