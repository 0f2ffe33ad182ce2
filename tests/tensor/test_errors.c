#include "../common.h"

TG_TEST(placeholder, builds) { cr_assert(1); }
