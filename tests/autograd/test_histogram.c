/* placeholder */
#include "../common.h"
Test(placeholder, nothing) { cr_assert(true); }
