// c10d: the umbrella header of the core library.
//
// Including it gives the whole public C++ API of the core: the error hierarchy, value types
// (Tensor, DataType, Device), reduce ops and reference kernels, Work, op options, ProcessGroup,
// broadcastCoalesced, the backend registry and init/rendezvous, and the diagnostics (flight
// recorder, stats, desync report). Stores have their own headers
// under store/.
#pragma once

#include "c10d/broadcast_coalesced.h"
#include "c10d/config.h"
#include "c10d/error.h"
#include "c10d/flight_recorder.h"
#include "c10d/group_diagnostics.h"
#include "c10d/init.h"
#include "c10d/options.h"
#include "c10d/process_group.h"
#include "c10d/reduce_op.h"
#include "c10d/registry.h"
#include "c10d/types.h"
#include "c10d/work.h"
