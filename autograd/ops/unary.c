/* placeholder: being written */
#include "../../tensor/internal.h"
