/*
 * tapegrad.h - the one header a program includes.
 *
 * tapegrad is a small tensor library with a tape-based autograd engine,
 * written to be read: tensor/ holds storage, views and kernels; autograd/
 * holds the operations and the tape that differentiates them; nn/ holds
 * the layers (modules with parameters and state).
 */
#ifndef TAPEGRAD_H
#define TAPEGRAD_H

#include "tensor/tensor.h"
#include "autograd/ops.h"
#include "autograd/autograd.h"
#include "nn/nn.h"

#define TAPEGRAD_VERSION "0.1.0"

/* Data-parallel training over MPI, in builds that found MPI (meson option
 * -Dmpi): dist/config.h, made by the build, sets TG_HAVE_MPI to 1 or 0. */
#include "dist/config.h"
#if TG_HAVE_MPI
#include "dist/dist.h"
#endif

#endif
