// c10d: the umbrella header of the core library.
//
// Including it gives the whole public C++ API of the core: the error hierarchy, value types
// (Tensor, DataType, Device), reduce ops and reference kernels, Work, op options, ProcessGroup,
// broadcastCoalesced, the backend registry and init/rendezvous, and the diagnostics (flight
// recorder, stats, desync report). Stores have their own headers
// under c10d/store/.
#pragma once

#include "c10d/base/config.h"
#include "c10d/base/error.h"
#include "c10d/base/types.h"
#include "c10d/bootstrap/init.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/core/broadcast_coalesced.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/core/options.h"
#include "c10d/core/process_group.h"
#include "c10d/core/reduce_op.h"
#include "c10d/core/work.h"
