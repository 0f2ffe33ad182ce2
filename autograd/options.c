/*
 * autograd/options.c - the one rule every option struct follows: a field
 * left 0 means its default, TG_EXACT_ZERO means a literal 0 (autograd.h,
 * "option structs"). The structs' own defaults are next to the code that
 * uses them.
 */
#include "internal.h"

#include <math.h>

double tg_option_or(double value, double dflt)
{
    if (value != 0.0)
        return value;
    return signbit(value) ? 0.0 : dflt;
}

double tg_option_literal(double value)
{
    return value == 0.0 ? TG_EXACT_ZERO : value;
}
