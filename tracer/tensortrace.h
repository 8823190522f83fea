/* tensortrace: the umbrella header. */
#ifndef TENSORTRACE_H
#define TENSORTRACE_H
#include "tt_runtime.h"
#include "tt_ops.h"
#include "tt_nn.h"
#include "tt_index.h"
#include "tt_trace.h"
#include "tt_model.h"
#include "tt_testing.h"
#include "tt_profile.h"
#include "tt_progress.h"
#include "tt_render.h"
#endif
