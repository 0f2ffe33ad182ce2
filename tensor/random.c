/* placeholder: being written */
#include "internal.h"
