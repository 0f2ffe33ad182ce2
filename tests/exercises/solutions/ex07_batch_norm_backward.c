/* placeholder */
#include "exercises.h"
